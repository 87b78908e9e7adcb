// Package scope is the catalog of OAuth scopes (libs/apispec/endpoints.json) and the set logic the grants apply to them.
package scope

import (
	"slices"
	"sort"
	"strings"
)

// Mode says which kind of token may carry a scope.
type Mode string

// Modes of the catalog.
const (
	ModeOBO     Mode = "obo"     // only in tokens a user consented to
	ModeService Mode = "service" // client credentials, or OBO when the user holds the permission
)

// Scope is one entry of the catalog.
type Scope struct {
	Name string
	Mode Mode
	// Sensitive scopes reach administrative endpoints or other users' data: a user
	// may grant one only when holding the permission of the same name.
	Sensitive   bool
	Description string
}

var catalog = []Scope{
	{"pii:basic", ModeOBO, false, "See your profile: your account id, name, username, date of birth and profile picture, your roles and permissions, your newsletter choice, whether your email is verified and whether your identity is verified, and whether you are a volunteer or a department lead"},
	{"pii:address", ModeOBO, false, "See your postal address"},
	{"pii:email", ModeOBO, false, "See your email address"},
	{"pii:phone", ModeOBO, false, "See your phone number"},
	{"pii:finance:read", ModeOBO, false, "See your orders: their numbers, what you bought and whether each is paid"},
	{"con:read", ModeOBO, false, "See your registration for the convention: your badge name, what you registered for, its options and flags, whether it is paid and its order number, with the name, username, email address and phone number it is under"},
	{"admin:ticket:read", ModeOBO, true, "Look up attendees' tickets, as an administrator (you have this permission)"},
	{"admin:ticket:scan", ModeOBO, true, "Scan attendees' tickets at the door, as an administrator (you have this permission)"},
	{"user:read", ModeService, true, "Read every user's profile and roles"},
	{"user:roles:update", ModeService, true, "Add and remove roles of any user"},
	{"volunteer:read", ModeService, true, "Read every volunteer application and department"},
	{"registration:read", ModeService, true, "Read every registration"},
	{"vendor:read", ModeService, true, "Read every dealer and their applications"},
	{"order:view", ModeService, true, "Read every order"},
	{"webhook:manage", ModeService, false, "Manage this app's webhook subscriptions"},
	// OpenID Connect's scopes (decision 0101): openid asks for an ID token;
	// the others for the claims of the same name at UserInfo.
	{OpenID, ModeOBO, false, "Sign you in to the app: it learns your account id and when you signed in"},
	{"profile", ModeOBO, false, "See your profile: your name, username, date of birth and profile picture"},
	{"email", ModeOBO, false, "See your email address and whether it is verified"},
	{"phone", ModeOBO, false, "See your phone number"},
	{"address", ModeOBO, false, "See your postal address"},
}

// OpenID is the scope that makes a request an OpenID Connect one.
const OpenID = "openid"

// Lookup returns the catalog entry of name.
func Lookup(name string) (Scope, bool) {
	for _, s := range catalog {
		if s.Name == name {
			return s, true
		}
	}
	return Scope{}, false
}

// All returns the names of every scope, in catalog order.
func All() []string {
	out := make([]string, len(catalog))
	for i, s := range catalog {
		out[i] = s.Name
	}
	return out
}

// Set is a normalized list of scope names: sorted, without duplicates.
type Set []string

// Parse splits space-separated scope strings (each element may itself hold
// several scopes, as repeated form fields do) into a Set.
func Parse(values ...string) Set {
	var out Set
	for _, v := range values {
		out = append(out, strings.Fields(v)...)
	}
	return Normalize(out)
}

// Normalize sorts names and removes duplicates.
func Normalize(names []string) Set {
	out := slices.Clone(names)
	sort.Strings(out)
	return Set(slices.Compact(out))
}

// String renders the set space-separated, as tokens carry it.
func (s Set) String() string { return strings.Join(s, " ") }

// Contains reports whether name is in s.
func (s Set) Contains(name string) bool {
	_, found := slices.BinarySearch(s, name)
	return found
}

// SubsetOf reports whether every scope of s is in other.
func (s Set) SubsetOf(other Set) bool {
	for _, n := range s {
		if !other.Contains(n) {
			return false
		}
	}
	return true
}

// Equal reports whether both sets hold the same names.
func (s Set) Equal(other Set) bool { return slices.Equal(s, other) }

// Unknown returns the names of s that are not in the catalog.
func (s Set) Unknown() []string {
	var out []string
	for _, n := range s {
		if _, ok := Lookup(n); !ok {
			out = append(out, n)
		}
	}
	return out
}

// OBOOnly returns the names of s whose mode is OBO.
func (s Set) OBOOnly() []string {
	var out []string
	for _, n := range s {
		if e, ok := Lookup(n); ok && e.Mode == ModeOBO {
			out = append(out, n)
		}
	}
	return out
}

// Sensitive returns the names of s that are sensitive.
func (s Set) Sensitive() []string {
	var out []string
	for _, n := range s {
		if e, ok := Lookup(n); ok && e.Sensitive {
			out = append(out, n)
		}
	}
	return out
}

// WithoutOBO returns s without its OBO-only scopes (what client credentials may get).
func (s Set) WithoutOBO() Set {
	var out Set
	for _, n := range s {
		if e, ok := Lookup(n); ok && e.Mode != ModeOBO {
			out = append(out, n)
		}
	}
	return out
}

// Missing returns the sensitive scopes of s whose permission is not in perms:
// the scopes a user may not grant.
func (s Set) Missing(perms []string) []string {
	held := Normalize(perms)
	var out []string
	for _, n := range s.Sensitive() {
		if !held.Contains(n) {
			out = append(out, n)
		}
	}
	return out
}

// Within returns the scopes of s that other has too, in s's order.
func (s Set) Within(other Set) Set {
	out := Set{}
	for _, n := range s {
		if other.Contains(n) {
			out = append(out, n)
		}
	}
	return out
}

// Standing returns the scopes of s that still stand: those the client is
// still approved for (clientScopes) and, for sensitive ones, whose
// permission the user still holds (perms).
func (s Set) Standing(clientScopes Set, perms []string) Set {
	missing := s.Missing(perms)
	out := Set{}
	for _, n := range s {
		if clientScopes.Contains(n) && !slices.Contains(missing, n) {
			out = append(out, n)
		}
	}
	return out
}
