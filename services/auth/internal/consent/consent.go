// Package consent remembers which scopes a user granted an app, so a later authorization asking for no more skips the consent page.
package consent

import (
	"context"
	"errors"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// ErrNotFound means the user has not authorized the app.
var ErrNotFound = errors.New("no consent")

// Consent is a user's grant to an app.
type Consent struct {
	UserID   int64
	ClientID int64
	Scopes   scope.Set
	// ClientScopes are the app's approved scopes when the user consented.
	ClientScopes scope.Set
	GrantedAt    time.Time
	// ClientName and ClientDescription are filled by ListForUser.
	ClientName, ClientDescription string
}

// Store keeps consents.
type Store interface {
	Get(ctx context.Context, userID, clientID int64) (Consent, error)
	Save(ctx context.Context, c Consent) error
	Delete(ctx context.Context, userID, clientID int64) error
	ListForUser(ctx context.Context, userID int64) ([]Consent, error)
}

// Covers reports whether a stored consent spares the user the consent page:
// it covers every requested scope and the app's approved scopes are unchanged.
func Covers(c Consent, requested, clientScopes scope.Set) bool {
	return requested.SubsetOf(c.Scopes) && c.ClientScopes.Equal(clientScopes)
}
