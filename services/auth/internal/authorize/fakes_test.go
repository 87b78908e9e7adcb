package authorize_test

import (
	"context"
	"fmt"
	"time"

	"github.com/eventreg/eventreg/libs/usersclient"

	"github.com/eventreg/eventreg/services/auth/internal/authorize"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clienttest"
	"github.com/eventreg/eventreg/services/auth/internal/consent"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/idtoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// The registered apps of the tests.
const (
	appID      = 520
	serviceID  = 501
	redirect   = "https://app.example/callback"
	issuer     = "https://id.example.org"
	goodHint   = "hint-of-user-7"
	strangerID = 8
)

var app = client.Client{ID: appID, Name: "Wiki", Kind: client.KindOBO, RedirectURIs: []string{redirect},
	Scopes: scope.Parse("openid profile admin:ticket:read"), RequirePKCE: false}

type consents map[[2]int64]consent.Consent

func (c consents) Get(_ context.Context, userID, clientID int64) (consent.Consent, error) {
	got, ok := c[[2]int64{userID, clientID}]
	if !ok {
		return consent.Consent{}, consent.ErrNotFound
	}
	return got, nil
}

func (c consents) Save(_ context.Context, v consent.Consent) error {
	c[[2]int64{v.UserID, v.ClientID}] = v
	return nil
}

func (c consents) Delete(_ context.Context, userID, clientID int64) error {
	delete(c, [2]int64{userID, clientID})
	return nil
}

func (c consents) ListForUser(_ context.Context, userID int64) ([]consent.Consent, error) {
	var out []consent.Consent
	for k, v := range c {
		if k[0] == userID {
			out = append(out, v)
		}
	}
	return out, nil
}

// users holds each user's permissions; a user not in it is gone.
type users map[int64][]string

func (u users) Permissions(_ context.Context, userID int64) ([]string, error) {
	perms, ok := u[userID]
	if !ok {
		return nil, usersclient.ErrNotFound
	}
	return perms, nil
}

type sessions struct{ deleted []string }

func (s *sessions) Delete(_ context.Context, id string) error {
	s.deleted = append(s.deleted, id)
	return nil
}

// store is the code and refresh-token stores, recording in order.
type store struct {
	calls   []string
	grants  []grant.CodeGrant
	revoked [][2]int64
}

func (s *store) Create(_ context.Context, g grant.CodeGrant) (string, error) {
	s.calls = append(s.calls, "create code family "+g.Family)
	s.grants = append(s.grants, g)
	return fmt.Sprintf("code-%d", len(s.grants)), nil
}

func (s *store) TTL() time.Duration { return 3 * time.Minute }

func (s *store) Reserve(_ context.Context, userID, clientID int64, id string, ttl time.Duration) error {
	s.calls = append(s.calls, fmt.Sprintf("reserve %d %d %s %s", userID, clientID, id, ttl))
	return nil
}

func (s *store) RevokeUserClient(_ context.Context, userID, clientID int64) error {
	s.revoked = append(s.revoked, [2]int64{userID, clientID})
	return nil
}

type hints struct{}

func (hints) ReadHint(raw string) (idtoken.Claims, error) {
	if raw != goodHint {
		return idtoken.Claims{}, idtoken.ErrBadHint
	}
	return idtoken.Claims{Subject: "7", Audience: "520"}, nil
}

// world is a Service over fakes: user 7 holds no permission, user 9 holds
// admin:ticket:read; the clock stands at now.
type world struct {
	svc      *authorize.Service
	consents consents
	sessions *sessions
	store    *store
	now      time.Time
}

func newWorld() *world {
	w := &world{consents: consents{}, sessions: &sessions{}, store: &store{}, now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	w.svc = &authorize.Service{
		Clients:  clienttest.Registry{appID: app, serviceID: {ID: serviceID, Kind: client.KindService, RedirectURIs: []string{redirect}, Scopes: scope.Parse("user:read")}},
		Consents: w.consents, Users: users{7: nil, 9: {"admin:ticket:read"}}, Sessions: w.sessions, Codes: w.store, Families: w.store,
		IDTokens: hints{}, Issuer: issuer, Now: func() time.Time { return w.now },
	}
	return w
}
