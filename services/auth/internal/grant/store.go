package grant

import (
	"context"
	"errors"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// The stores the rules run over: authorization codes and refresh-token
// families in Redis (codedb, refreshdb), the access-token denylist that
// revocations write (refreshdb.Denylist) and the browser sessions a sign-out
// ends (session). storetest holds the contract every implementation passes.

// Codes redeems authorization codes (codedb.Store).
type Codes interface {
	// Redeem consumes code for clientID and redirectURI; challenge is the
	// S256 challenge of the presented code_verifier ("" when none was sent)
	// and must equal the stored one. A code presented with the wrong client,
	// redirect URI or challenge is ErrCodeInvalid and stays unused. A code
	// redeemed before is ErrCodeReplayed, told only to its client, with the
	// grant carrying the family to revoke.
	Redeem(ctx context.Context, code string, clientID int64, redirectURI, challenge string) (CodeGrant, error)
}

// Families keeps refresh-token families (refreshdb.Store). Revoking a
// family, however it happens, revokes its access tokens too (their sid,
// SessionID of the family, goes on the denylist).
type Families interface {
	// Create starts family f and returns its first token. A family revoked
	// before it was created (its code replayed meanwhile, or withdrawn)
	// answers the token, which is dead, with ErrFamilyRevoked.
	Create(ctx context.Context, f Family) (string, error)
	// Peek returns the family whose current token is token, changing
	// nothing: ErrRefreshInvalid when unknown, ended, revoked or rotated.
	Peek(ctx context.Context, token string) (Family, error)
	// Rotate replaces r.Token with a new token of its family for r.ClientID.
	// Of concurrent rotations of one token exactly one succeeds; the others
	// present a rotated token: ErrRefreshReused, the family revoked.
	// Another client's token is ErrWrongClient and changes nothing.
	Rotate(ctx context.Context, r Rotation) (string, error)
	// DetectReuse reports whether token is a rotated token of a live
	// family of clientID, and then revokes the family. Another client's
	// token, or any other, is no reuse and changes nothing.
	DetectReuse(ctx context.Context, token string, clientID int64) (bool, error)
	// RevokeFamily revokes family id, leaving a tombstone when it does not
	// exist yet.
	RevokeFamily(ctx context.Context, id string) error
	// Withdrawn reports whether family id was revoked before it was created
	// because its user's or app's authorizations were (not because its code
	// was replayed).
	Withdrawn(ctx context.Context, id string) (bool, error)
	// RevokeUser revokes the live families of userID for which match
	// answers true, and those of the user's outstanding codes, and returns
	// how many it revoked.
	RevokeUser(ctx context.Context, userID int64, match func(Family) bool) (int, error)
}

// Denylist holds the revoked access tokens until they expire
// (refreshdb.Denylist): it answers introspection and is the revocation feed
// the resource services poll.
type Denylist interface {
	// RevokeIssuedThrough revokes the tokens of who issued at or before
	// through: one entry per client or family, replacing an older one.
	RevokeIssuedThrough(ctx context.Context, who Cutoff, through time.Time) error
	// Revoked reports whether an access token was revoked: its family, or a
	// cutoff of its client or family.
	Revoked(ctx context.Context, c accesstoken.Claims) (bool, error)
	// Feed returns the revocations numbered after after, one page.
	Feed(ctx context.Context, after int64) (authapi.Revocations, error)
}

// Sessions ends browser sessions (session.Store).
type Sessions interface {
	// EndUser ends every session of userID and returns how many it found.
	EndUser(ctx context.Context, userID int64) (int, error)
}

// CodeGrant is what an authorization code stands for.
type CodeGrant struct {
	ClientID    int64
	RedirectURI string
	UserID      int64
	Scopes      scope.Set
	Challenge   string // S256 challenge, empty without PKCE
	// Family is the refresh-token family the redemption will create; a
	// replayed code revokes it.
	Family string
	// OpenID Connect: the request's nonce (echoed in the ID token), when
	// the user authenticated (Unix seconds, the ID token's auth_time) and
	// the browser session's sid.
	Nonce    string
	AuthTime int64
	SID      string
}

// Family is one authorization's chain of refresh tokens.
type Family struct {
	ID       string
	ClientID int64
	UserID   int64
	// Granted is the scope set the user consented to, narrowed when the
	// user or client lost a scope; a refresh may narrow, never widen.
	Granted scope.Set
	// Last is the scope set of the newest access token (used when a refresh omits scope).
	Last scope.Set
	// JTI of the newest access token.
	JTI string
	// AuthTime (Unix seconds) and SID are the ID token's auth_time and sid:
	// when the user authenticated for this authorization, and the browser
	// session's sid (OpenID Connect; empty for an authorization without it).
	AuthTime int64
	SID      string
}

// Rotation is a refresh: the presented token of the client, and what the
// family records of it (the grant as it stands now, and the scopes and jti
// of the access token issued with the next token).
type Rotation struct {
	Token    string
	ClientID int64
	Granted  scope.Set
	Last     scope.Set
	JTI      string
}

// Cutoff names the access tokens a cutoff revokes: a client's (ClientID)
// or, when SID is set, a family's.
type Cutoff struct {
	ClientID int64
	SID      string
}

// Outcomes of the stores.
var (
	ErrCodeInvalid    = errors.New("code unknown, expired or not bound to this client, redirect URI and challenge")
	ErrCodeReplayed   = errors.New("code already redeemed")
	ErrRefreshInvalid = errors.New("refresh token unknown, expired, revoked or rotated")
	ErrRefreshReused  = errors.New("a rotated refresh token was presented; family revoked")
	ErrWrongClient    = errors.New("refresh token of another client")
	ErrFamilyRevoked  = errors.New("family revoked before it was created")
)
