package tokenauth

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"
)

// revocationList holds what the feed revoked: jtis and sids, each with the
// unix second after which it can be forgotten, and cutoffs revoking the
// tokens of a client or of a family issued at or before a second. Polls
// change it in place under the lock; requests read it under the read lock
// (no copy per poll). It holds at most max entries: past that it drops
// those that expire first and, failing closed, revokes every token expiring
// no later than the last one dropped (floor).
type revocationList struct {
	mu             sync.RWMutex
	jti, sid       map[string]int64
	client, family map[string]cut
	minExp         int64 // the earliest exp held (MaxInt64 when empty)
	floor          int64 // tokens with exp <= floor are revoked (0: none)
	max            int
	dropped        int64 // entries dropped over the cap so far
}

// cut revokes the tokens issued (iat) at or before through; it can be
// forgotten after exp.
type cut struct{ through, exp int64 }

func newRevocationList(max int) *revocationList {
	return &revocationList{jti: map[string]int64{}, sid: map[string]int64{}, client: map[string]cut{},
		family: map[string]cut{}, minExp: math.MaxInt64, max: max}
}

func (l *revocationList) lists(c *Claims) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.floor != 0 && c.Expiry.Unix() <= l.floor {
		return true
	}
	if c.ID != "" {
		if _, ok := l.jti[c.ID]; ok {
			return true
		}
	}
	iat := c.IssuedAt.Unix()
	if cut, ok := l.client[c.ClientID]; ok && iat <= cut.through {
		return true
	}
	if c.SessionID != "" {
		if _, ok := l.sid[c.SessionID]; ok {
			return true
		}
		if cut, ok := l.family[c.SessionID]; ok && iat <= cut.through {
			return true
		}
	}
	return false
}

// size is the number of entries held.
func (l *revocationList) size() int {
	return len(l.jti) + len(l.sid) + len(l.client) + len(l.family)
}

// merge adds entries and drops those with exp <= cutoff.
func (l *revocationList) merge(entries []authapi.Revocation, cutoff int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.minExp <= cutoff {
		l.sweep(cutoff)
	}
	if l.floor != 0 && l.floor <= cutoff {
		l.floor = 0 // every token it revoked has expired
	}
	for _, e := range entries {
		if e.Expiry <= cutoff {
			continue
		}
		switch {
		case e.JTI != "":
			l.jti[e.JTI] = max(l.jti[e.JTI], e.Expiry)
		case e.SID != "":
			l.sid[e.SID] = max(l.sid[e.SID], e.Expiry)
		case e.Client != "":
			addCutoff(l.client, e.Client, e)
		case e.Family != "":
			addCutoff(l.family, e.Family, e)
		default:
			continue
		}
		l.minExp = min(l.minExp, e.Expiry)
	}
	if l.size() > l.max {
		l.compact()
	}
}

// addCutoff keeps the later of two cutoffs of one client or family.
func addCutoff(m map[string]cut, id string, e authapi.Revocation) {
	c := m[id]
	m[id] = cut{through: max(c.through, e.IssuedThrough), exp: max(c.exp, e.Expiry)}
}

// sweep deletes the entries with exp <= cutoff, in place.
func (l *revocationList) sweep(cutoff int64) {
	l.minExp = math.MaxInt64
	for _, m := range []map[string]int64{l.jti, l.sid} {
		for k, exp := range m {
			if exp <= cutoff {
				delete(m, k)
			} else {
				l.minExp = min(l.minExp, exp)
			}
		}
	}
	for _, m := range []map[string]cut{l.client, l.family} {
		for k, c := range m {
			if c.exp <= cutoff {
				delete(m, k)
			} else {
				l.minExp = min(l.minExp, c.exp)
			}
		}
	}
}

// compact brings the list down to nine tenths of max by dropping the
// entries that expire first, and raises the floor to the last exp dropped:
// a token named by a dropped entry expires no later than the entry, so it
// stays revoked (with every other token expiring by then). Only a feed
// larger than max pays for it.
func (l *revocationList) compact() {
	exps := make([]int64, 0, l.size())
	for _, m := range []map[string]int64{l.jti, l.sid} {
		for _, exp := range m {
			exps = append(exps, exp)
		}
	}
	for _, m := range []map[string]cut{l.client, l.family} {
		for _, c := range m {
			exps = append(exps, c.exp)
		}
	}
	slices.Sort(exps)
	drop := len(exps) - l.max*9/10
	l.floor = max(l.floor, exps[drop-1])
	before := l.size()
	l.sweep(l.floor)
	l.dropped += int64(before - l.size())
}

// stats returns the number of entries held, the floor and the entries
// dropped so far.
func (l *revocationList) stats() (held int, floor, dropped int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.size(), l.floor, l.dropped
}

// pollRevocations asks the feed (authapi.PathRevocations) for what was
// revoked after the cursor and merges it: answers may repeat entries; a failure keeps the list and is logged (at most once a minute).
// A burst of revocations larger than one page is read in up to
// maxPagesPerPoll pages at once; the rest waits for the next poll.
func (v *Validator) pollRevocations(ctx context.Context) {
	for range maxPagesPerPoll {
		more, err := v.pollOnce(ctx)
		if err != nil && ctx.Err() == nil {
			v.feedErrors.report(v.cfg.Now(), err)
		}
		if err != nil || !more {
			return
		}
	}
}

// maxPagesPerPoll bounds the pages one poll reads.
const maxPagesPerPoll = 50

func (v *Validator) pollOnce(ctx context.Context) (more bool, err error) {
	u := *v.feedURL
	q := u.Query()
	q.Set("after", strconv.FormatInt(v.cursor, 10))
	u.RawQuery = q.Encode()
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	body, err := getJSON(fctx, v.cfg.HTTPClient, u.String(), v.cfg.FeedCredentials, "application/json")
	if err != nil {
		return false, fmt.Errorf("polling revocations: %w", err)
	}
	var a authapi.Revocations
	if err := json.Unmarshal(body, &a); err != nil {
		return false, fmt.Errorf("polling revocations: decoding: %w", err)
	}
	// An entry is needed while a token with that exp is still accepted, up
	// to exp + Leeway.
	cutoff := v.cfg.Now().Add(-v.cfg.Leeway).Unix()
	v.revoked.merge(a.Revoked, cutoff)
	if (a.Epoch != v.epoch && v.epoch != "") || a.Next < v.cursor {
		// The feed was lost or moved back (Redis lost writes): what is
		// numbered up to the old cursor now may be new. Read it all again;
		// what is held stays (it was revoked all the same).
		v.epoch, v.cursor = a.Epoch, 0
		return true, nil
	}
	v.epoch, v.cursor = a.Epoch, a.Next
	if !a.More {
		v.feedRead.Store(true)
	}
	return a.More, nil
}
