// Package signin holds the rules of signing in to the authorization server's pages: the identifier, failures throttled by counting each attempt before the password is checked, and the browser session a sign-in starts. It speaks no HTTP: pagesapi reads the form and renders the answers.
package signin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/eventreg/eventreg/libs/usersclient"

	"github.com/eventreg/eventreg/services/auth/internal/authmetrics"
	"github.com/eventreg/eventreg/services/auth/internal/session"
)

// Users checks credentials (usersclient.Client).
type Users interface {
	// Verify returns the user id, usersclient.ErrBadCredentials for a
	// wrong username or password, or another error when it cannot answer.
	Verify(ctx context.Context, username, password string) (int64, error)
}

// Sessions keeps browser sessions (session.Store).
type Sessions interface {
	Get(ctx context.Context, id string) (session.Session, error)
	Create(ctx context.Context, userID int64) (session.Session, error)
	Delete(ctx context.Context, id string) error
}

// Failures counts attempts of one kind per key (throttle.Failures).
type Failures interface {
	// Count counts one attempt of key; wait > 0 refuses it (then nothing
	// stays counted), remaining is what is left of the allowance.
	Count(ctx context.Context, key string) (wait time.Duration, remaining int, err error)
	// Refund gives back one attempt of key.
	Refund(ctx context.Context, key string) error
	// Limit is the allowance per window.
	Limit() int
}

// Known remembers keys for a while (throttle.Known).
type Known interface {
	Has(ctx context.Context, key string) (bool, error)
	Add(ctx context.Context, key string) error
}

// Service applies the rules of signing in.
type Service struct {
	Users    Users
	Sessions Sessions
	// Attempts are counted before the password is checked, against the
	// identifier as typed (accountKey). Over AccountAddressFailures (per
	// account and client address) or AddressFailures (per client address)
	// sign-in is refused for a while. Over AccountFailures (per account
	// from any address) it is refused too, but only from addresses the
	// account has not signed in from within LOGIN_KNOWN_ADDRESS_TTL
	// (KnownAddresses): guesses spread over many addresses get that budget
	// and no more, and a stranger cannot lock the user out of the places
	// he signs in from (decision 0091).
	AccountAddressFailures Failures
	AddressFailures        Failures
	AccountFailures        Failures
	KnownAddresses         Known
	// FailureDelay slows the answer to a wrong guess once half of an
	// allowance is used.
	FailureDelay time.Duration
	Log          *slog.Logger
	// Metrics counts wrong guesses (nil: not counted).
	Metrics *authmetrics.Metrics
}

// Attempt is a sign-in form as sent.
type Attempt struct {
	// Login is the username or email as typed; Password the password.
	Login, Password string
	// Address is the key of the client's address (ratelimit.AddressKey).
	Address string
	// Replaces is the browser's session before ("" for none): a sign-in
	// ends it.
	Replaces string
}

// ErrBadCredentials is a wrong username or password, or a form that cannot
// hold right ones (empty, too long): one answer for all, so that it tells
// nothing of accounts.
var ErrBadCredentials = errors.New("the username or password is incorrect")

// PausedError refuses an attempt: too many failures; try again after Wait.
type PausedError struct{ Wait time.Duration }

func (e *PausedError) Error() string {
	return fmt.Sprintf("too many sign-in attempts; retry after %s", e.Wait)
}

// Bounds of what the form may hold.
const (
	maxLogin    = 320
	maxPassword = 1024
)

// Identifier is the login as the rules read it: without surrounding spaces.
func Identifier(login string) string { return strings.TrimSpace(login) }

// SignIn checks a and starts a session. It returns ErrBadCredentials, a
// *PausedError, or an error of a store or of the users service.
func (s *Service) SignIn(ctx context.Context, a Attempt) (session.Session, error) {
	login := Identifier(a.Login)
	if login == "" || a.Password == "" || len(login) > maxLogin || len(a.Password) > maxPassword {
		return session.Session{}, ErrBadCredentials
	}
	account := accountKey(login)
	counted, wait, slow, err := s.count(ctx, account, a.Address)
	if err != nil {
		return session.Session{}, fmt.Errorf("counting a sign-in attempt: %w", err)
	}
	if wait > 0 {
		return session.Session{}, &PausedError{Wait: wait}
	}
	userID, err := s.Users.Verify(ctx, login, a.Password)
	if errors.Is(err, usersclient.ErrBadCredentials) {
		s.Metrics.LoginFailed()
		if slow {
			s.slowDown(ctx)
		}
		return session.Session{}, ErrBadCredentials
	}
	// Not a wrong guess: the attempt does not count against anyone.
	s.refund(ctx, counted)
	if err != nil {
		return session.Session{}, fmt.Errorf("verifying credentials: %w", err)
	}
	if a.Replaces != "" {
		_ = s.Sessions.Delete(ctx, a.Replaces)
	}
	sess, err := s.Sessions.Create(ctx, userID)
	if err != nil {
		return session.Session{}, fmt.Errorf("creating a session: %w", err)
	}
	if err := s.KnownAddresses.Add(ctx, account+"|"+a.Address); err != nil {
		s.Log.WarnContext(ctx, "remembering the address of a sign-in failed", "error", err.Error())
	}
	return sess, nil
}

// Current returns the session id names, nil when there is none (no id, or
// the session ended).
func (s *Service) Current(ctx context.Context, id string) (*session.Session, error) {
	if id == "" {
		return nil, nil
	}
	sess, err := s.Sessions.Get(ctx, id)
	if errors.Is(err, session.ErrNone) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading a session: %w", err)
	}
	return &sess, nil
}

// slowDown waits FailureDelay, or until ctx ends.
func (s *Service) slowDown(ctx context.Context) {
	if s.FailureDelay <= 0 {
		return
	}
	t := time.NewTimer(s.FailureDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
