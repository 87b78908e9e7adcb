package tokenauth

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"
)

// revocationList is an immutable snapshot of the revoked jtis and sids, each
// with the unix second after which it can be forgotten. A poll that changes
// it stores a new one, so requests read it without a lock.
type revocationList struct {
	jti, sid map[string]int64
	minExp   int64 // the earliest exp held (MaxInt64 when empty)
}

func (l *revocationList) lists(c *Claims) bool {
	if c.ID != "" {
		if _, ok := l.jti[c.ID]; ok {
			return true
		}
	}
	if c.SessionID != "" {
		if _, ok := l.sid[c.SessionID]; ok {
			return true
		}
	}
	return false
}

// merge returns l with entries added and those with exp <= cutoff dropped,
// or l itself when that changes nothing. l may be nil (empty).
func (l *revocationList) merge(entries []authapi.Revocation, cutoff int64) *revocationList {
	if l == nil {
		l = &revocationList{minExp: math.MaxInt64}
	}
	changed := l.minExp <= cutoff
	for _, e := range entries {
		if e.Expiry <= cutoff {
			continue
		}
		if (e.JTI != "" && l.jti[e.JTI] < e.Expiry) || (e.SID != "" && l.sid[e.SID] < e.Expiry) {
			changed = true
			break
		}
	}
	if !changed {
		return l
	}
	next := &revocationList{jti: live(l.jti, cutoff), sid: live(l.sid, cutoff)}
	for _, e := range entries {
		if e.Expiry <= cutoff {
			continue
		}
		if e.JTI != "" {
			next.jti[e.JTI] = max(next.jti[e.JTI], e.Expiry)
		}
		if e.SID != "" {
			next.sid[e.SID] = max(next.sid[e.SID], e.Expiry)
		}
	}
	next.minExp = math.MaxInt64
	for _, m := range []map[string]int64{next.jti, next.sid} {
		for _, exp := range m {
			next.minExp = min(next.minExp, exp)
		}
	}
	return next
}

func live(m map[string]int64, cutoff int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, exp := range m {
		if exp > cutoff {
			out[k] = exp
		}
	}
	return out
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
	l := v.revoked.Load()
	if merged := l.merge(a.Revoked, cutoff); merged != l {
		v.revoked.Store(merged)
	}
	v.cursor = a.Next
	return a.More, nil
}
