package cursor_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/cursor"
)

var key = []byte("0123456789abcdef0123456789abcdef")

type filter struct {
	RoleID int64  `json:"roleId,omitempty"`
	Email  string `json:"email,omitempty"`
}

func TestRoundTrip(t *testing.T) {
	c, _ := cursor.NewCodec(key)
	for _, after := range []int64{0, 1, 1000, 900_000, 1<<62 + 5} {
		s := c.Encode("users.search", filter{RoleID: 3}, after)
		got, err := c.Decode(s, "users.search", filter{RoleID: 3})
		if err != nil || got != after {
			t.Fatalf("after=%d: got %d, %v", after, got, err)
		}
	}
}

func TestRefusals(t *testing.T) {
	c, _ := cursor.NewCodec(key)
	good := c.Encode("users.search", filter{RoleID: 3}, 42)
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	flipped := append([]byte(nil), raw...)
	flipped[5] ^= 1 // change the key it continues after
	other, _ := cursor.NewCodec([]byte(strings.Repeat("k", 32)))

	cases := map[string]struct {
		cursor, query string
		filter        any
	}{
		"tampered key":             {base64.RawURLEncoding.EncodeToString(flipped), "users.search", filter{RoleID: 3}},
		"other filter":             {good, "users.search", filter{RoleID: 4}},
		"filter dropped":           {good, "users.search", nil},
		"other query":              {good, "registrations.search", filter{RoleID: 3}},
		"signed with another key":  {other.Encode("users.search", filter{RoleID: 3}, 42), "users.search", filter{RoleID: 3}},
		"not base64":               {"!!!!" + good[4:], "users.search", filter{RoleID: 3}},
		"truncated":                {good[:len(good)-2], "users.search", filter{RoleID: 3}},
		"empty":                    {"", "users.search", filter{RoleID: 3}},
		"docs example lastId 1000": {base64.StdEncoding.EncodeToString([]byte(`{ lastId: 1000 }`)), "users.search", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := c.Decode(tc.cursor, tc.query, tc.filter); !errors.Is(err, cursor.ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
		})
	}
}

func TestShortKeyRefused(t *testing.T) {
	if _, err := cursor.NewCodec([]byte("short")); err == nil {
		t.Fatal("want error")
	}
}

func BenchmarkEncode(b *testing.B) {
	c, _ := cursor.NewCodec(key)
	f := filter{RoleID: 3}
	for b.Loop() {
		_ = c.Encode("users.search", f, 900_000)
	}
}

func BenchmarkDecode(b *testing.B) {
	c, _ := cursor.NewCodec(key)
	f := filter{RoleID: 3}
	s := c.Encode("users.search", f, 900_000)
	for b.Loop() {
		if _, err := c.Decode(s, "users.search", f); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	c, _ := cursor.NewCodec(key)
	f.Add(c.Encode("q", nil, 7))
	f.Add("")
	f.Add("eyBsYXN0SWQ6IDEwMDAgfQ==")
	f.Fuzz(func(t *testing.T, s string) {
		after, err := c.Decode(s, "q", nil)
		if err == nil && c.Encode("q", nil, after) != s {
			t.Fatalf("accepted a cursor that it would not have issued: %q", s)
		}
	})
}
