package signin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/eventreg/eventreg/libs/usersclient"

	"github.com/eventreg/eventreg/services/auth/internal/session"
	"github.com/eventreg/eventreg/services/auth/internal/signin"
)

// trail records the calls of the fakes, in order, to check what the rules
// asked and when.
type trail struct{ calls []string }

func (t *trail) add(format string, args ...any) {
	t.calls = append(t.calls, fmt.Sprintf(format, args...))
}

// failures is an in-memory throttle.Failures: allowed attempts per key.
type failures struct {
	name    string
	allowed int
	used    map[string]int
	err     error
	trail   *trail
}

func (f *failures) Count(_ context.Context, key string) (time.Duration, int, error) {
	f.trail.add("count %s %s", f.name, key)
	if f.err != nil {
		return 0, 0, f.err
	}
	if f.used[key] >= f.allowed {
		return time.Minute, 0, nil
	}
	f.used[key]++
	return 0, f.allowed - f.used[key], nil
}

func (f *failures) Refund(_ context.Context, key string) error {
	f.trail.add("refund %s %s", f.name, key)
	if f.used[key] > 0 {
		f.used[key]--
	}
	return nil
}

func (f *failures) Limit() int { return f.allowed }

// known is an in-memory throttle.Known.
type known struct {
	keys  map[string]bool
	trail *trail
}

func (k *known) Has(_ context.Context, key string) (bool, error) {
	k.trail.add("known? %s", key)
	return k.keys[key], nil
}

func (k *known) Add(_ context.Context, key string) error {
	k.trail.add("remember %s", key)
	k.keys[key] = true
	return nil
}

// users knows one account, by username and by email.
type users struct {
	down  bool
	trail *trail
}

func (u *users) Verify(_ context.Context, username, password string) (int64, error) {
	u.trail.add("verify %s", username)
	switch {
	case u.down:
		return 0, errors.New("users service unavailable")
	case (username == "alice" || username == "alice@example.org") && password == "right":
		return 7, nil
	}
	return 0, usersclient.ErrBadCredentials
}

// sessions is an in-memory session.Store.
type sessions struct {
	byID  map[string]session.Session
	next  int
	trail *trail
}

func (s *sessions) Get(_ context.Context, id string) (session.Session, error) {
	sess, ok := s.byID[id]
	if !ok {
		return session.Session{}, session.ErrNone
	}
	return sess, nil
}

func (s *sessions) Create(_ context.Context, userID int64) (session.Session, error) {
	s.next++
	sess := session.Session{ID: fmt.Sprintf("s%d", s.next), UserID: userID, CreatedAt: time.Now()}
	s.byID[sess.ID] = sess
	s.trail.add("create session %s", sess.ID)
	return sess, nil
}

func (s *sessions) Delete(_ context.Context, id string) error {
	s.trail.add("delete session %s", id)
	delete(s.byID, id)
	return nil
}

// world is a Service over fakes with the allowances of a test.
type world struct {
	svc                              *signin.Service
	trail                            *trail
	accountAddress, address, account *failures
	known                            *known
	users                            *users
	sessions                         *sessions
}

func newWorld(perAccount, perAddress int) *world {
	tr := &trail{}
	w := &world{trail: tr,
		accountAddress: &failures{name: "account-address", allowed: perAccount, used: map[string]int{}, trail: tr},
		address:        &failures{name: "address", allowed: perAddress, used: map[string]int{}, trail: tr},
		account:        &failures{name: "account", allowed: perAccount, used: map[string]int{}, trail: tr},
		known:          &known{keys: map[string]bool{}, trail: tr},
		users:          &users{trail: tr},
		sessions:       &sessions{byID: map[string]session.Session{}, trail: tr},
	}
	w.svc = &signin.Service{Users: w.users, Sessions: w.sessions, AccountAddressFailures: w.accountAddress, AddressFailures: w.address,
		AccountFailures: w.account, KnownAddresses: w.known, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return w
}
