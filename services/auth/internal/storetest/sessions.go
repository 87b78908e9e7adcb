package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/session"
)

// SessionStore is the contract of a browser-session store: the sign-in
// pages create, read and end sessions, and grant's sign-out everywhere ends
// a user's (grant.Sessions).
type SessionStore interface {
	grant.Sessions
	Create(ctx context.Context, userID int64) (session.Session, error)
	// Get returns the session of id, extending its idle lifetime, or
	// session.ErrNone.
	Get(ctx context.Context, id string) (session.Session, error)
	Delete(ctx context.Context, id string) error
}

// Sessions runs the contract of session stores; open returns a store whose
// sessions end idle after their last use and absolute after the sign-in.
// Stores opened by one test may share their data: every case uses users of
// its own.
func Sessions(t *testing.T, open func(t *testing.T, idle, absolute time.Duration) SessionStore) {
	s := open(t, time.Hour, 24*time.Hour)
	sign := func(t *testing.T, s SessionStore, user int64) session.Session {
		t.Helper()
		sess, err := s.Create(ctx, user)
		must(t, "signing in", err)
		return sess
	}
	live := func(t *testing.T, s SessionStore, sess session.Session) {
		t.Helper()
		got, err := s.Get(ctx, sess.ID)
		must(t, "reading the session", err)
		check(t, "the session", got, sess)
	}
	gone := func(t *testing.T, s SessionStore, what, id string) {
		t.Helper()
		_, err := s.Get(ctx, id)
		is(t, what, err, session.ErrNone)
	}

	t.Run("a session is found by its id", func(t *testing.T) {
		sess := sign(t, s, 6001)
		if sess.ID == "" || sess.UserID != 6001 || sess.CreatedAt.IsZero() {
			t.Fatalf("created %+v", sess)
		}
		sess.CreatedAt = sess.CreatedAt.Truncate(time.Second) // kept to the second
		live(t, s, sess)
	})
	t.Run("an unknown or empty id is no session", func(t *testing.T) {
		gone(t, s, "an unknown id", "no-such-session")
		gone(t, s, "an empty id", "")
	})
	t.Run("a deleted session is gone; deleting an unknown one is no error", func(t *testing.T) {
		sess := sign(t, s, 6002)
		must(t, "deleting", s.Delete(ctx, sess.ID))
		gone(t, s, "a deleted session", sess.ID)
		must(t, "deleting it again", s.Delete(ctx, sess.ID))
	})
	t.Run("ending a user's sessions ends each of them and no other user's", func(t *testing.T) {
		a1, a2, b := sign(t, s, 6003), sign(t, s, 6003), sign(t, s, 6004)
		n, err := s.EndUser(ctx, 6003)
		must(t, "ending the user's sessions", err)
		check(t, "sessions ended", n, 2)
		gone(t, s, "the user's first session", a1.ID)
		gone(t, s, "the user's second session", a2.ID)
		_, err = s.Get(ctx, b.ID)
		must(t, "another user's session", err)
		n, err = s.EndUser(ctx, 6003)
		must(t, "ending them again", err)
		check(t, "sessions ended the second time", n, 0)
	})
	t.Run("a sign-in after the user's sessions were ended lives", func(t *testing.T) {
		_, err := s.EndUser(ctx, 6005)
		must(t, "ending the user's sessions", err)
		sess := sign(t, s, 6005)
		_, err = s.Get(ctx, sess.ID)
		must(t, "the new session", err)
	})
	t.Run("use extends a session's idle lifetime; unused, it ends", func(t *testing.T) {
		idle := open(t, 400*time.Millisecond, time.Hour)
		sess := sign(t, idle, 6006)
		time.Sleep(250 * time.Millisecond)
		_, err := idle.Get(ctx, sess.ID)
		must(t, "using the session within its idle lifetime", err)
		time.Sleep(250 * time.Millisecond) // past the first idle end, within the extended one
		_, err = idle.Get(ctx, sess.ID)
		must(t, "using the session its use kept alive", err)
		outlive(400 * time.Millisecond)
		gone(t, idle, "a session past its idle lifetime", sess.ID)
	})
}
