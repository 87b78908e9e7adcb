package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
	"github.com/eventreg/eventreg/services/auth/internal/session"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
)

// MemoryCodes keeps authorization codes in memory (CodeStore).
type MemoryCodes struct {
	mu    sync.Mutex
	ttl   time.Duration
	codes map[string]*memCode
}

type memCode struct {
	grant.CodeGrant
	used    bool
	expires time.Time
}

// NewMemoryCodes returns an empty store whose codes live ttl.
func NewMemoryCodes(ttl time.Duration) *MemoryCodes {
	return &MemoryCodes{ttl: ttl, codes: map[string]*memCode{}}
}

// Create stores g and returns a new code.
func (m *MemoryCodes) Create(_ context.Context, g grant.CodeGrant) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	code := randtoken.New(32)
	m.codes[code] = &memCode{CodeGrant: g, expires: time.Now().Add(m.ttl)}
	return code, nil
}

// Redeem consumes code as codedb.Store.Redeem does.
func (m *MemoryCodes) Redeem(_ context.Context, code string, clientID int64, redirectURI, challenge string) (grant.CodeGrant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.codes[code]
	switch {
	case !ok || time.Now().After(c.expires) || c.ClientID != clientID:
		return grant.CodeGrant{}, grant.ErrCodeInvalid
	case c.used:
		return grant.CodeGrant{Family: c.Family}, grant.ErrCodeReplayed
	case c.RedirectURI != redirectURI || c.Challenge != challenge:
		return grant.CodeGrant{}, grant.ErrCodeInvalid
	}
	c.used, c.expires = true, time.Now().Add(10*time.Minute)
	return c.CodeGrant, nil
}

// MemorySessions keeps browser sessions in memory (SessionStore).
type MemorySessions struct {
	mu             sync.Mutex
	idle, absolute time.Duration
	sessions       map[string]*memSession
}

type memSession struct {
	session.Session
	expires time.Time
}

// NewMemorySessions returns an empty store whose sessions end idle after
// their last use, or absolute after the sign-in.
func NewMemorySessions(idle, absolute time.Duration) *MemorySessions {
	return &MemorySessions{idle: idle, absolute: absolute, sessions: map[string]*memSession{}}
}

// Create starts a session of userID.
func (m *MemorySessions) Create(_ context.Context, userID int64) (session.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	s := session.Session{ID: randtoken.New(32), UserID: userID, CreatedAt: now}
	m.sessions[s.ID] = &memSession{Session: s, expires: now.Add(min(m.idle, m.absolute))}
	return s, nil
}

// Get returns the session of id and extends its idle lifetime.
func (m *MemorySessions) Get(_ context.Context, id string) (session.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	now := time.Now()
	if !ok || now.After(s.expires) {
		return session.Session{}, session.ErrNone
	}
	s.expires = now.Add(min(m.idle, s.CreatedAt.Add(m.absolute).Sub(now)))
	out := s.Session
	out.CreatedAt = out.CreatedAt.Truncate(time.Second) // as stores keep it
	return out, nil
}

// Delete ends the session of id.
func (m *MemorySessions) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, id)
	return nil
}

// EndUser ends every session of userID and returns how many it found.
func (m *MemorySessions) EndUser(_ context.Context, userID int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, s := range m.sessions {
		if s.UserID == userID {
			delete(m.sessions, id)
			n++
		}
	}
	return n, nil
}

// MemoryKeys keeps signing keys in memory (signing.Store), for tests that
// sign without PostgreSQL; its zero value holds no keys.
type MemoryKeys struct {
	mu   sync.Mutex
	keys []signing.Key
}

// List returns the keys held, in the order they were added.
func (m *MemoryKeys) List(context.Context) ([]signing.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]signing.Key(nil), m.keys...), nil
}

// Locked runs decide on the keys held and adds the keys it returns, one
// caller at a time as keydb.Store's lock has it; when decide fails nothing
// is added, as keydb.Store's transaction rolls back.
func (m *MemoryKeys) Locked(_ context.Context, decide func([]signing.Key) ([]signing.Key, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	add, err := decide(append([]signing.Key(nil), m.keys...))
	if err != nil {
		return err
	}
	m.keys = append(m.keys, add...)
	return nil
}
