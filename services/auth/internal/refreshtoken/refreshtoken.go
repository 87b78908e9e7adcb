// Package refreshtoken is the old import path of the refresh-token store,
// kept for browser, whose rules are being moved into business packages of
// their own: new code imports grant (the rules, Family, NewFamilyID) and
// grant/refreshdb (the store). Delete it once nothing imports it.
package refreshtoken

import (
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/grant/refreshdb"
)

// Store is refreshdb.Store.
type Store = refreshdb.Store

// NewFamilyID is grant.NewFamilyID.
func NewFamilyID() string { return grant.NewFamilyID() }
