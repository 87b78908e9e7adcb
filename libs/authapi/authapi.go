// Package authapi is the auth service's internal API: the paths, wire types
// and a client for the services that call it (users tells auth when a
// user's permissions shrink; the resource services poll the revocation
// feed through libs/tokenauth).
package authapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/eventreg/eventreg/libs/svcclient"
)

// Internal paths.
const (
	// PathRevocations is the revocation feed: GET ?after=N → Revocations.
	PathRevocations = "/internal/revocations"
	// PathUserChanged is POST with no body → UserChanged: the user's
	// permissions shrank or the user was deleted; auth revokes the
	// authorizations that no longer stand.
	PathUserChanged = "/internal/users/:id/permissions-changed"
)

// Revocations is one page of the revocation feed.
type Revocations struct {
	// Next is the number to ask after on the next poll.
	Next int64 `json:"next"`
	// More says the page was full: ask again at once with Next.
	More bool `json:"more,omitempty"`
	// Epoch names the feed; another epoch, or a Next below the cursor
	// asked after, means the feed was lost or moved back (Redis lost
	// writes): read it again from 0.
	Epoch string `json:"epoch,omitempty"`
	// Revoked names revoked access tokens: by jti, every token of a
	// session (refresh-token family) by sid, or by cutoff the tokens of a
	// client or of a session issued at or before a second; forget an entry
	// after Expiry.
	Revoked []Revocation `json:"revoked"`
}

// Revocation is one entry: JTI, SID, Client or Family is set. A Client or
// Family entry revokes the tokens of that client (client_id) or session
// (sid) whose iat is at most IssuedThrough; a later entry for the same one
// supersedes it. (Replicas of an older release ignore these entries: they
// know only jti and sid.)
type Revocation struct {
	JTI           string `json:"jti,omitempty"`
	SID           string `json:"sid,omitempty"`
	Client        string `json:"client_id,omitempty"`
	Family        string `json:"family_sid,omitempty"`
	IssuedThrough int64  `json:"iat_through,omitempty"`
	Expiry        int64  `json:"exp"`
}

// UserChanged says how many authorizations auth revoked.
type UserChanged struct {
	Revoked int `json:"revoked"`
}

// Client calls the auth internal API.
type Client struct{ c *svcclient.Client }

// NewClient returns a client for the auth internal listener at baseURL whose
// calls carry a service token from creds (the caller's servicetoken.Signer).
func NewClient(baseURL string, timeout time.Duration, creds svcclient.Credentials) *Client {
	return &Client{c: svcclient.New("auth", baseURL, timeout, creds)}
}

// UserChanged tells auth that userID's permissions shrank (or the user is
// gone) and returns how many authorizations it revoked.
func (c *Client) UserChanged(ctx context.Context, userID int64) (int, error) {
	var resp UserChanged
	if err := c.c.Do(ctx, http.MethodPost, svcclient.UserPath(PathUserChanged, userID), nil, &resp); err != nil {
		return 0, fmt.Errorf("telling auth about user %d: %w", userID, err)
	}
	return resp.Revoked, nil
}
