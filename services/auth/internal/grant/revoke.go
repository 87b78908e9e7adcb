package grant

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
)

// Revoke is token revocation (RFC 7009) by the authenticated client cl: a
// refresh token of its own ends its family and the family's access tokens;
// an access token of its own is revoked with every token of its family (an
// OBO token) or of its client (a service token) issued no later than it,
// one denylist entry per family or client however many are revoked
// (docs/decisions/0093). Tokens that are unknown, invalid or another
// client's change nothing and are no error (§2.2).
func (s *Service) Revoke(ctx context.Context, cl client.Client, raw string) error {
	if _, isRefresh := FamilyOfToken(raw); isRefresh {
		fam, err := s.Refresh.Peek(ctx, raw)
		switch {
		case err == nil && fam.ClientID == cl.ID:
			return s.revokeFamily(ctx, fam.ID, "revoked by its client")
		case err != nil && !errors.Is(err, ErrRefreshInvalid):
			return apierror.DependencyFailed(tokenStore, err)
		}
		return nil
	}
	claims, err := s.Tokens.Read(raw)
	if err != nil || claims.ClientID != strconv.FormatInt(cl.ID, 10) {
		return nil
	}
	who := Cutoff{ClientID: cl.ID}
	if claims.SessionID != "" {
		who = Cutoff{SID: claims.SessionID}
	}
	if err := s.Denylist.RevokeIssuedThrough(ctx, who, time.Unix(claims.IssuedAt, 0)); err != nil {
		return apierror.DependencyFailed(tokenStore, err)
	}
	return nil
}

// Introspection is what introspection (RFC 7662) tells the client that
// owns a token; the zero value is an inactive token.
type Introspection struct {
	Active bool
	// Refresh is set for a refresh token, Access for an access token.
	Refresh *Family
	Access  *accesstoken.Claims
}

// Introspect tells the authenticated client cl about a token of its own;
// another client's token, like an invalid or revoked one, is inactive.
func (s *Service) Introspect(ctx context.Context, cl client.Client, raw string) (Introspection, error) {
	if _, isRefresh := FamilyOfToken(raw); isRefresh {
		fam, err := s.Refresh.Peek(ctx, raw)
		if err != nil && !errors.Is(err, ErrRefreshInvalid) {
			return Introspection{}, apierror.DependencyFailed(tokenStore, err)
		}
		if err != nil || fam.ClientID != cl.ID {
			return Introspection{}, nil
		}
		return Introspection{Active: true, Refresh: &fam}, nil
	}
	claims, err := s.Tokens.Read(raw)
	if err != nil || claims.ClientID != strconv.FormatInt(cl.ID, 10) {
		return Introspection{}, nil
	}
	revoked, err := s.Denylist.Revoked(ctx, claims)
	if err != nil {
		return Introspection{}, apierror.DependencyFailed(tokenStore, err)
	}
	if revoked {
		return Introspection{}, nil
	}
	return Introspection{Active: true, Access: &claims}, nil
}

// RevocationFeed returns the page of the revocation feed numbered after
// after (the resource services poll it).
func (s *Service) RevocationFeed(ctx context.Context, after int64) (authapi.Revocations, error) {
	page, err := s.Denylist.Feed(ctx, after)
	if err != nil {
		return page, apierror.DependencyFailed(tokenStore, err)
	}
	return page, nil
}
