// Package authcode is the old import path of the authorization-code store,
// kept for browser, whose rules are being moved into business packages of
// their own: new code imports grant (CodeGrant) and grant/codedb (the
// store). Delete it once nothing imports it.
package authcode

import (
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/grant/codedb"
)

// Store is codedb.Store.
type Store = codedb.Store

// Grant is grant.CodeGrant.
type Grant = grant.CodeGrant
