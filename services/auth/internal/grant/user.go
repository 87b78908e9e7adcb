package grant

import (
	"context"
	"errors"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/usersclient"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// standing returns what of scopes still stands for userID and cl (see
// scope.Set.Standing): invalid_grant when the user is gone or nothing is
// left.
func (s *Service) standing(ctx context.Context, cl client.Client, userID int64, scopes scope.Set) (scope.Set, error) {
	perms, err := s.Users.Permissions(ctx, userID)
	if errors.Is(err, usersclient.ErrNotFound) {
		return nil, oauthErr(apierror.OAuthInvalidGrant, "The user of this grant no longer exists.")
	}
	if err != nil {
		return nil, apierror.DependencyFailed(usersService, err)
	}
	left := scopes.Standing(cl.Scopes, perms)
	if len(left) == 0 {
		return nil, oauthErr(apierror.OAuthInvalidGrant, "Nothing this grant authorized is still allowed: the user or the app lost every scope of it.")
	}
	return left, nil
}

// UserChanged revokes the authorizations of userID that no longer stand:
// every one when the user is gone, else those holding a sensitive scope
// whose permission the user lost. Their access tokens stop at the resource
// services with the next poll of the revocation feed. It returns how many
// families it revoked.
func (s *Service) UserChanged(ctx context.Context, userID int64) (int, error) {
	perms, err := s.Users.Permissions(ctx, userID)
	gone := errors.Is(err, usersclient.ErrNotFound)
	if err != nil && !gone {
		return 0, apierror.DependencyFailed(usersService, err)
	}
	n, err := s.Refresh.RevokeUser(ctx, userID, func(f Family) bool {
		return gone || len(f.Granted.Missing(perms)) > 0
	})
	if err != nil {
		return 0, apierror.DependencyFailed(tokenStore, err)
	}
	if n > 0 {
		s.Log.InfoContext(ctx, "revoked authorizations after a permission change", "user_id", userID, "families", n)
	}
	return n, nil
}

// SignedOut is what SignOut ended.
type SignedOut struct {
	Sessions       int
	Authorizations int
}

// SignOut ends everything userID is signed in with: every browser session,
// every authorization of every app (refresh-token families, whose access
// tokens stop at the resource services with the next poll of the
// revocation feed) and every code not redeemed yet. A password change and
// the operator's `users sign-out` ask for it. It may run again after a
// failure: what it ended stays ended.
func (s *Service) SignOut(ctx context.Context, userID int64) (SignedOut, error) {
	var out SignedOut
	var err error
	// Sessions first: once they are gone, no new code can be issued to
	// outlive the revocation below.
	if out.Sessions, err = s.Sessions.EndUser(ctx, userID); err != nil {
		return out, apierror.DependencyFailed(tokenStore, err)
	}
	out.Authorizations, err = s.Refresh.RevokeUser(ctx, userID, func(Family) bool { return true })
	if err != nil {
		return out, apierror.DependencyFailed(tokenStore, err)
	}
	s.Log.InfoContext(ctx, "signed a user out everywhere", "user_id", userID, "sessions", out.Sessions, "families", out.Authorizations)
	return out, nil
}
