package user_test

import (
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/users/internal/user"
)

func valid() user.User {
	pn, phone, pic := "Al", "+15555550100", "https://cdn.example.org/a.png"
	return user.User{ID: 1, Username: "alice", Email: "alice@example.org", FirstName: "Alice", LastName: "Liddell",
		PreferredName: &pn, BornAt: time.Date(1990, 4, 1, 0, 0, 0, 0, time.UTC), Phone: &phone, ProfilePictureURL: &pic,
		Address: &user.Address{Line1: "1 Main St", City: "Springfield", State: "IL", Zipcode: "62701", Country: "US"}}
}

func TestValidate(t *testing.T) {
	if p := user.Validate(valid()); len(p) != 0 {
		t.Fatalf("a valid user has problems: %v", p)
	}
	str := func(s string) *string { return &s }
	cases := map[string]func(u *user.User){
		"id":                     func(u *user.User) { u.ID = 0 },
		"username":               func(u *user.User) { u.Username = "al@ice" },
		"email":                  func(u *user.User) { u.Email = "Alice <alice@example.org>" },
		"firstName":              func(u *user.User) { u.FirstName = "  " },
		"lastName":               func(u *user.User) { u.LastName = strings.Repeat("x", 201) },
		"bornAt":                 func(u *user.User) { u.BornAt = time.Now().AddDate(1, 0, 0) },
		"phone":                  func(u *user.User) { u.Phone = str("0049 123") },
		"profilePictureUrl":      func(u *user.User) { u.ProfilePictureURL = str("javascript:alert(1)") },
		"address.addressCountry": func(u *user.User) { u.Address.Country = "usa" },
		"address.addressLine1":   func(u *user.User) { u.Address.Line1 = "" },
	}
	for field, change := range cases {
		t.Run(field+" is checked", func(t *testing.T) {
			u := valid()
			change(&u)
			p := user.Validate(u)
			if _, ok := p[field]; !ok || len(p) != 1 {
				t.Fatalf("problems %v", p)
			}
		})
	}
}

func TestParseDate(t *testing.T) {
	if d, err := user.ParseDate("2000-02-29"); err != nil || d.Day() != 29 {
		t.Fatalf("%v %v", d, err)
	}
	for _, s := range []string{"", "2001-02-29", "01/02/2000", "2000-1-1"} {
		if _, err := user.ParseDate(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
