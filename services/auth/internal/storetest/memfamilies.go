package storetest

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
)

// MemoryFamilies keeps refresh-token families in memory (RefreshStore),
// revoking their access tokens in a MemoryDenylist.
type MemoryFamilies struct {
	mu             sync.Mutex
	idle, absolute time.Duration
	denylist       *MemoryDenylist
	families       map[string]*memFamily
	reserved       map[int64][]reservation // by user
}

type memFamily struct {
	grant.Family
	cur                string
	rotated            map[string]bool
	revoked, withdrawn bool
	created, expires   time.Time
}

type reservation struct {
	clientID int64
	family   string
	until    time.Time
}

// NewMemoryTokens returns an empty family store whose families end idle
// after their last use and absolute after their creation, and the denylist
// of access tokens living accessTTL that its revocations write to.
func NewMemoryTokens(idle, absolute, accessTTL time.Duration) (*MemoryFamilies, *MemoryDenylist) {
	d := &MemoryDenylist{ttl: accessTTL, sids: map[string]time.Time{}, cuts: map[grant.Cutoff]*memEntry{}, epoch: randtoken.New(12)}
	return &MemoryFamilies{idle: idle, absolute: absolute, denylist: d, families: map[string]*memFamily{}, reserved: map[int64][]reservation{}}, d
}

// revokedMemory is how long a revoked family is remembered.
const revokedMemory = 30 * 24 * time.Hour

// family returns family id unless it ended (a revoked one is returned).
func (m *MemoryFamilies) family(id string) (*memFamily, bool) {
	f, ok := m.families[id]
	if ok && time.Now().After(f.expires) {
		delete(m.families, id)
		return nil, false
	}
	return f, ok
}

// live returns the family of token when it is live, whatever the token.
func (m *MemoryFamilies) live(token string) (*memFamily, bool) {
	id, ok := grant.FamilyOfToken(token)
	if !ok {
		return nil, false
	}
	f, ok := m.family(id)
	return f, ok && !f.revoked
}

func (m *MemoryFamilies) revoke(f *memFamily) {
	f.revoked, f.expires = true, time.Now().Add(revokedMemory)
	m.denylist.RevokeSessions(grant.SessionID(f.ID))
}

// Create starts family f.
func (m *MemoryFamilies) Create(_ context.Context, f grant.Family) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tok := grant.NewRefreshToken(f.ID)
	if _, exists := m.family(f.ID); exists {
		return tok, grant.ErrFamilyRevoked
	}
	now := time.Now()
	m.families[f.ID] = &memFamily{Family: f, cur: tok, rotated: map[string]bool{}, created: now, expires: now.Add(min(m.idle, m.absolute))}
	return tok, nil
}

// Peek returns the family whose current token is token.
func (m *MemoryFamilies) Peek(_ context.Context, token string) (grant.Family, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.live(token)
	if !ok || f.cur != token {
		return grant.Family{}, grant.ErrRefreshInvalid
	}
	return f.Family, nil
}

// Rotate replaces r.Token as refreshdb.Store.Rotate does.
func (m *MemoryFamilies) Rotate(_ context.Context, r grant.Rotation) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.live(r.Token)
	switch {
	case !ok:
		return "", grant.ErrRefreshInvalid
	case f.ClientID != r.ClientID:
		return "", grant.ErrWrongClient
	case f.rotated[r.Token]:
		m.revoke(f)
		return "", grant.ErrRefreshReused
	case f.cur != r.Token:
		return "", grant.ErrRefreshInvalid
	}
	now := time.Now()
	left := f.created.Add(m.absolute).Sub(now)
	if left <= 0 {
		delete(m.families, f.ID)
		return "", grant.ErrRefreshInvalid
	}
	next := grant.NewRefreshToken(f.ID)
	f.rotated[r.Token] = true
	f.cur, f.Granted, f.Last, f.JTI, f.expires = next, r.Granted, r.Last, r.JTI, now.Add(min(m.idle, left))
	return next, nil
}

// DetectReuse revokes the family of a rotated token of clientID.
func (m *MemoryFamilies) DetectReuse(_ context.Context, token string, clientID int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.live(token)
	if !ok || f.ClientID != clientID || !f.rotated[token] {
		return false, nil
	}
	m.revoke(f)
	return true, nil
}

// RevokeFamily revokes family id, leaving a tombstone when it does not exist.
func (m *MemoryFamilies) RevokeFamily(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revokeID(id, false)
	return nil
}

// revokeID revokes family id, tombstoned (withdrawn when it is a
// reservation's) when it does not exist.
func (m *MemoryFamilies) revokeID(id string, withdrawn bool) {
	f, ok := m.family(id)
	if !ok {
		f = &memFamily{Family: grant.Family{ID: id}, withdrawn: withdrawn}
		m.families[id] = f
	}
	m.revoke(f)
}

// Withdrawn reports whether family id was withdrawn before its creation.
func (m *MemoryFamilies) Withdrawn(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.family(id)
	return ok && f.withdrawn, nil
}

// Reserve records that a code of userID and clientID will start family id.
func (m *MemoryFamilies) Reserve(_ context.Context, userID, clientID int64, id string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reserved[userID] = append(m.reserved[userID], reservation{clientID: clientID, family: id, until: time.Now().Add(ttl)})
	return nil
}

// RevokeUser revokes the live families of userID that match, and those of
// its outstanding codes.
func (m *MemoryFamilies) RevokeUser(_ context.Context, userID int64, match func(grant.Family) bool) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.revokeUser(userID, 0, match), nil
}

// RevokeUserClient revokes the families of userID with clientID, and those
// of their outstanding codes.
func (m *MemoryFamilies) RevokeUserClient(_ context.Context, userID, clientID int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revokeUser(userID, clientID, func(grant.Family) bool { return true })
	return nil
}

// revokeUser revokes the families of userID (with clientID, any when 0).
func (m *MemoryFamilies) revokeUser(userID, clientID int64, match func(grant.Family) bool) int {
	n := 0
	for _, r := range m.reserved[userID] {
		if time.Now().After(r.until) || (clientID != 0 && r.clientID != clientID) {
			continue
		}
		if _, exists := m.family(r.family); !exists {
			m.revokeID(r.family, true)
			n++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(m.families)) {
		f, ok := m.family(id)
		if ok && !f.revoked && f.UserID == userID && (clientID == 0 || f.ClientID == clientID) && match(f.Family) {
			m.revoke(f)
			n++
		}
	}
	return n
}

// MemoryDenylist keeps revoked access tokens in memory (grant.Denylist).
type MemoryDenylist struct {
	mu    sync.Mutex
	ttl   time.Duration
	sids  map[string]time.Time // until
	cuts  map[grant.Cutoff]*memEntry
	feed  []*memEntry
	seq   int64
	epoch string
}

type memEntry struct {
	seq int64
	authapi.Revocation
}

// add appends e to the feed.
func (d *MemoryDenylist) add(e authapi.Revocation) *memEntry {
	d.seq++
	entry := &memEntry{seq: d.seq, Revocation: e}
	d.feed = append(d.feed, entry)
	return entry
}

// RevokeSessions revokes the access tokens carrying one of sids.
func (d *MemoryDenylist) RevokeSessions(sids ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	until := time.Now().Add(d.ttl + time.Minute)
	for _, sid := range sids {
		d.sids[sid] = until
		d.add(authapi.Revocation{SID: sid, Expiry: until.Unix()})
	}
}

// RevokeIssuedThrough revokes the tokens of who issued through through.
func (d *MemoryDenylist) RevokeIssuedThrough(_ context.Context, who grant.Cutoff, through time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.cuts[who]
	if ok && old.IssuedThrough >= through.Unix() {
		return nil
	}
	if ok {
		d.feed = slices.DeleteFunc(d.feed, func(e *memEntry) bool { return e == old })
	}
	e := authapi.Revocation{IssuedThrough: through.Unix(), Expiry: through.Add(d.ttl + time.Minute).Unix()}
	if who.SID != "" {
		e.Family = who.SID
	} else {
		e.Client = strconv.FormatInt(who.ClientID, 10)
	}
	d.cuts[who] = d.add(e)
	return nil
}

// Revoked reports whether the access token of c was revoked.
func (d *MemoryDenylist) Revoked(_ context.Context, c accesstoken.Claims) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if until, ok := d.sids[c.SessionID]; ok && c.SessionID != "" && time.Now().Before(until) {
		return true, nil
	}
	clientID, _ := strconv.ParseInt(c.ClientID, 10, 64)
	cutoffs := []grant.Cutoff{{ClientID: clientID}}
	if c.SessionID != "" {
		cutoffs = append(cutoffs, grant.Cutoff{SID: c.SessionID})
	}
	for _, who := range cutoffs {
		if e, ok := d.cuts[who]; ok && c.IssuedAt <= e.IssuedThrough {
			return true, nil
		}
	}
	return false, nil
}

// Feed returns the revocations numbered after after.
func (d *MemoryDenylist) Feed(_ context.Context, after int64) (authapi.Revocations, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if after > d.seq {
		after = 0
	}
	page := authapi.Revocations{Epoch: d.epoch, Next: d.seq, Revoked: []authapi.Revocation{}}
	for _, e := range d.feed {
		if e.seq > after && e.Expiry >= time.Now().Add(-time.Minute).Unix() {
			page.Revoked = append(page.Revoked, e.Revocation)
		}
	}
	return page, nil
}
