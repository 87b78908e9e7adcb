package userapi

import (
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user"
)

// userView is the service view of a user (endpoints under /api/v0/users).
type userView struct {
	ID            string       `json:"id"`
	Email         string       `json:"email"`
	PreferredName *string      `json:"preferredName"`
	FirstName     string       `json:"firstName"`
	LastName      string       `json:"lastName"`
	Username      string       `json:"username"`
	Verified      bool         `json:"verified"`
	Phone         *string      `json:"phone"`
	Address       *addressView `json:"address"`
}

type addressView struct {
	AddressCity    string  `json:"addressCity"`
	AddressCountry string  `json:"addressCountry"`
	AddressLine1   string  `json:"addressLine1"`
	AddressLine2   *string `json:"addressLine2"`
	AddressState   string  `json:"addressState"`
	AddressZipcode string  `json:"addressZipcode"`
}

func toUserView(u user.User) userView {
	v := userView{ID: strconv.FormatInt(u.ID, 10), Email: u.Email, PreferredName: u.PreferredName,
		FirstName: u.FirstName, LastName: u.LastName, Username: u.Username, Verified: u.EmailVerified, Phone: u.Phone}
	if a := u.Address; a != nil {
		v.Address = &addressView{AddressCity: a.City, AddressCountry: a.Country, AddressLine1: a.Line1,
			AddressLine2: a.Line2, AddressState: a.State, AddressZipcode: a.Zipcode}
	}
	return v
}

func toSummary(u user.Summary) usersclient.UserSummary {
	return usersclient.UserSummary{ID: strconv.FormatInt(u.ID, 10), FirstName: u.FirstName, LastName: u.LastName,
		Username: u.Username, PreferredName: u.PreferredName, Phone: u.Phone, Email: u.Email}
}

type roleView struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type userRoleView struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Scope string `json:"scope"`
}

// currentUserView renders the current-user view; the fields of a scope the
// token lacks are left out (absent, not null).
func currentUserView(u user.User, held []role.Held, isVolunteer, isLead bool, hasScope func(string) bool) gin.H {
	roles := make([]roleView, 0, len(held))
	for _, h := range held {
		roles = append(roles, roleView{ID: strconv.FormatInt(h.Role.ID, 10), Name: h.Role.Name})
	}
	v := gin.H{
		"sub":               strconv.FormatInt(u.ID, 10),
		"id":                u.ID,
		"bornAt":            u.BornAt.UTC().Format(time.DateOnly),
		"firstName":         u.FirstName,
		"lastName":          u.LastName,
		"preferredName":     u.PreferredName,
		"username":          u.Username,
		"newsletter":        u.Newsletter,
		"emailVerified":     u.EmailVerified,
		"identityVerified":  u.IdentityVerified,
		"isVolunteer":       isVolunteer,
		"isDepartmentLead":  isLead,
		"permissions":       role.PermissionsOf(held),
		"profilePictureUrl": u.ProfilePictureURL,
		"userRoles":         roles,
	}
	if hasScope(ScopeAddress) {
		var a user.Address
		present := u.Address != nil
		if present {
			a = *u.Address
		}
		str := func(s string) *string {
			if !present {
				return nil
			}
			return &s
		}
		v["addressLine1"], v["addressLine2"], v["addressCity"] = str(a.Line1), a.Line2, str(a.City)
		v["addressState"], v["addressZipcode"], v["addressCountry"] = str(a.State), str(a.Zipcode), str(a.Country)
	}
	if hasScope(ScopeEmail) {
		v["email"] = u.Email
	}
	if hasScope(ScopePhone) {
		v["phone"] = u.Phone
	}
	return v
}
