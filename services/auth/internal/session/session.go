// Package session keeps browser sessions in Redis: a random id in an HttpOnly cookie, stored by its SHA-256, with idle and absolute expiry.
package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
)

// ErrNone means there is no valid session.
var ErrNone = errors.New("no session")

// Session is a signed-in browser.
type Session struct {
	ID        string
	UserID    int64
	CreatedAt time.Time
}

// Store keeps sessions.
type Store struct {
	rdb           redis.UniversalClient
	idle, absolut time.Duration
	now           func() time.Time
}

// New returns a store whose sessions end after idle without use, or absolute after sign-in.
func New(rdb redis.UniversalClient, idle, absolute time.Duration) *Store {
	return &Store{rdb: rdb, idle: idle, absolut: absolute, now: time.Now}
}

func key(id string) string { return "auth:sess:{" + randtoken.Hash(id) + "}" }

// Create starts a session for userID and returns it.
func (s *Store) Create(ctx context.Context, userID int64) (Session, error) {
	sess := Session{ID: randtoken.New(32), UserID: userID, CreatedAt: s.now()}
	k := key(sess.ID)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, "user", userID, "created", sess.CreatedAt.Unix())
		p.PExpire(ctx, k, s.idle)
		return nil
	})
	if err != nil {
		return Session{}, fmt.Errorf("storing session: %w", err)
	}
	return sess, nil
}

// Get returns the session of id and extends its idle expiry, or ErrNone.
func (s *Store) Get(ctx context.Context, id string) (Session, error) {
	if id == "" || len(id) > 100 {
		return Session{}, ErrNone
	}
	k := key(id)
	v, err := s.rdb.HMGet(ctx, k, "user", "created").Result()
	if err != nil {
		return Session{}, fmt.Errorf("reading session: %w", err)
	}
	us, _ := v[0].(string)
	cs, _ := v[1].(string)
	user, err1 := strconv.ParseInt(us, 10, 64)
	created, err2 := strconv.ParseInt(cs, 10, 64)
	if err1 != nil || err2 != nil {
		return Session{}, ErrNone
	}
	sess := Session{ID: id, UserID: user, CreatedAt: time.Unix(created, 0)}
	remaining := sess.CreatedAt.Add(s.absolut).Sub(s.now())
	if remaining <= 0 {
		_ = s.rdb.Del(ctx, k).Err()
		return Session{}, ErrNone
	}
	if err := s.rdb.PExpire(ctx, k, min(s.idle, remaining)).Err(); err != nil {
		return Session{}, fmt.Errorf("extending session: %w", err)
	}
	return sess, nil
}

// Delete ends the session of id.
func (s *Store) Delete(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	if err := s.rdb.Del(ctx, key(id)).Err(); err != nil {
		return fmt.Errorf("deleting session: %w", err)
	}
	return nil
}
