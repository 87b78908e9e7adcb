// Package session keeps browser sessions in Redis: a random id in an HttpOnly cookie, stored by its SHA-256, with idle and absolute expiry, and indexed per user so that every session of a user can be ended (EndUser).
package session

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
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

// SID is the session's sid in ID tokens: it names the session to apps
// without revealing its id (the cookie's value).
func (s Session) SID() string {
	sum := sha256.Sum256([]byte("eventreg browser sid|" + s.ID))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
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

func key(id string) string { return keyOfHash(randtoken.Hash(id)) }

func keyOfHash(hash string) string { return "auth:sess:{" + hash + "}" }

// userKey is the index of a user's sessions: a sorted set of the hashes
// their keys are named by, scored by their absolute end (Unix ms). It lives
// as long as its newest session can, and drops the members past their end
// at every sign-in, so it neither outlives its sessions nor grows without bound.
func userKey(userID int64) string { return "auth:sessu:{u" + strconv.FormatInt(userID, 10) + "}" }

// ErrEnded means the user's sessions were ended (EndUser) while this one was being created.
var ErrEnded = errors.New("the user's sessions were ended while signing in")

// Create starts a session for userID and returns it. The session is
// indexed before it is stored and the index is checked after: EndUser
// empties the index before it deletes, so a session created while EndUser
// runs is either deleted by it or finds itself gone from the index and
// deletes itself (ErrEnded).
func (s *Store) Create(ctx context.Context, userID int64) (Session, error) {
	sess := Session{ID: randtoken.New(32), UserID: userID, CreatedAt: s.now()}
	h, idx := randtoken.Hash(sess.ID), userKey(userID)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, idx, "-inf", "("+strconv.FormatInt(sess.CreatedAt.UnixMilli(), 10))
		p.ZAdd(ctx, idx, redis.Z{Score: float64(sess.CreatedAt.Add(s.absolut).UnixMilli()), Member: h})
		p.PExpire(ctx, idx, s.absolut)
		return nil
	})
	if err != nil {
		return Session{}, fmt.Errorf("indexing session: %w", err)
	}
	k := keyOfHash(h)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, sessionHash{User: userID, Created: sess.CreatedAt.Unix()})
		p.PExpire(ctx, k, s.idle)
		return nil
	})
	if err != nil {
		return Session{}, fmt.Errorf("storing session: %w", err)
	}
	if err := s.rdb.ZScore(ctx, idx, h).Err(); err != nil {
		_ = s.rdb.Del(ctx, k).Err()
		if errors.Is(err, redis.Nil) {
			return Session{}, ErrEnded
		}
		return Session{}, fmt.Errorf("checking the session index: %w", err)
	}
	return sess, nil
}

// endingKey holds the sessions EndUser took from the index and has not
// deleted yet, so that a failed EndUser is finished by the next one.
func endingKey(userID int64) string { return userKey(userID) + ":ending" }

// takeIndex moves the index into the ending set (merged with what a failed
// run left there) in one step, and returns the ending set.
var takeIndex = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('ZUNIONSTORE', KEYS[2], 2, KEYS[2], KEYS[1], 'AGGREGATE', 'MAX')
  redis.call('DEL', KEYS[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
return redis.call('ZRANGE', KEYS[2], 0, -1)
`)

// EndUser ends every session of userID and returns how many it found
// (some may have ended by themselves already). The index is emptied first:
// a session being created meanwhile deletes itself (see Create).
func (s *Store) EndUser(ctx context.Context, userID int64) (int, error) {
	ending := endingKey(userID)
	hashes, err := takeIndex.Run(ctx, s.rdb, []string{userKey(userID), ending}, s.absolut.Milliseconds()).StringSlice()
	if err != nil {
		return 0, fmt.Errorf("listing a user's sessions: %w", err)
	}
	for _, h := range hashes {
		// One key per call: each session lives in its own cluster slot.
		if err := s.rdb.Del(ctx, keyOfHash(h)).Err(); err != nil {
			return 0, fmt.Errorf("ending a session: %w", err)
		}
		if err := s.rdb.ZRem(ctx, ending, h).Err(); err != nil {
			return 0, fmt.Errorf("ending a session: %w", err)
		}
	}
	return len(hashes), nil
}

// sessionHash is a session's hash, field by field.
type sessionHash struct {
	User    int64 `redis:"user"`
	Created int64 `redis:"created"`
}

// Get returns the session of id and extends its idle expiry, or ErrNone.
func (s *Store) Get(ctx context.Context, id string) (Session, error) {
	if id == "" || len(id) > 100 {
		return Session{}, ErrNone
	}
	k := key(id)
	vals, err := s.rdb.HGetAll(ctx, k).Result()
	if err != nil {
		return Session{}, fmt.Errorf("reading session: %w", err)
	}
	var h sessionHash
	if err := redis.NewMapStringStringResult(vals, nil).Scan(&h); err != nil || h.User == 0 || h.Created == 0 {
		return Session{}, ErrNone
	}
	sess := Session{ID: id, UserID: h.User, CreatedAt: time.Unix(h.Created, 0)}
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
