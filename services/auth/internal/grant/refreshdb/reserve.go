package refreshdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/redisscript"
)

// Reserve records that a code issued now for userID and clientID, living
// ttl, will start family id, so that revoking the user's (or the user and
// client's) authorizations before the code is redeemed revokes the family
// before it exists: the redemption is then refused (Withdrawn), or the
// family it creates is dead (Create answers grant.ErrFamilyRevoked).
func (s *Store) Reserve(ctx context.Context, userID, clientID int64, id string, ttl time.Duration) error {
	k := pendingKey(userID)
	now := time.Now()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, k, "-inf", "("+strconv.FormatInt(now.UnixMilli(), 10))
		p.ZAdd(ctx, k, redis.Z{Score: float64(now.Add(ttl).UnixMilli()), Member: strconv.FormatInt(clientID, 10) + ":" + id})
		// Each code lives at most ttl; the slack covers a redemption in flight.
		p.PExpire(ctx, k, ttl+time.Minute)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reserving a refresh token family: %w", err)
	}
	return nil
}

// Withdrawn reports whether family id was revoked before it was created
// because its code's user or authorization was revoked meanwhile (not
// because the code was replayed: the first redemption of a replayed code
// still gets its, dead, tokens).
func (s *Store) Withdrawn(ctx context.Context, id string) (bool, error) {
	v, err := s.rdb.HGet(ctx, famKey(id), "withdrawn").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("reading refresh token family: %w", err)
	}
	return v == "1", nil
}

// tombstone revokes a family that does not exist yet; 'live' when it does.
var tombstone = redisscript.New[revokeArgs](`
local family = KEYS[1]
if redis.call('EXISTS', family) == 1 then return 'live' end
redis.call('HSET', family, 'revoked', '1', 'withdrawn', '1')
redis.call('PEXPIRE', family, revoked_ms)
return 'tombstoned'
`)

// revokePending revokes the families the outstanding codes of userID (with
// clientID, or with any client when clientID is 0) will start: every one
// not created yet, and those created meanwhile that match. It returns how
// many it revoked.
func (s *Store) revokePending(ctx context.Context, userID, clientID int64, match func(grant.Family) bool) (int, error) {
	members, err := s.rdb.ZRangeByScore(ctx, pendingKey(userID), &redis.ZRangeBy{
		Min: strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10), Max: "+inf"}).Result()
	if err != nil {
		return 0, fmt.Errorf("listing a user's outstanding codes: %w", err)
	}
	n := 0
	for _, m := range members {
		c, id, _ := strings.Cut(m, ":")
		if cid, err := strconv.ParseInt(c, 10, 64); err != nil || (clientID != 0 && cid != clientID) {
			continue
		}
		res, err := tombstone.Run(ctx, s.rdb, []string{famKey(id)}, revokeArgs{RevokedMS: revokedMemory.Milliseconds()}).Text()
		if err != nil {
			return n, fmt.Errorf("revoking a reserved refresh token family: %w", err)
		}
		if res == "tombstoned" {
			// The access token of a redemption in flight carries its sid.
			if err := s.denylist.RevokeSessions(ctx, grant.SessionID(id)); err != nil {
				return n, err
			}
			n++
			continue
		}
		// Created by now, maybe not indexed yet: judged here.
		revoked, err := s.revokeIfLive(ctx, id, match)
		if err != nil {
			return n, err
		}
		if revoked {
			n++
		}
	}
	return n, nil
}

// revokeIfLive revokes family id when it is live and matches.
func (s *Store) revokeIfLive(ctx context.Context, id string, match func(grant.Family) bool) (bool, error) {
	h, err := s.read(ctx, id)
	if errors.Is(err, grant.ErrRefreshInvalid) || (err == nil && !match(h.family(id))) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, s.RevokeFamily(ctx, id)
}

// RevokeUserClient revokes every family of userID with clientID, and their
// access tokens, and the families of the outstanding codes of both.
func (s *Store) RevokeUserClient(ctx context.Context, userID, clientID int64) error {
	all := func(grant.Family) bool { return true }
	if _, err := s.revokeWhere(ctx, userID, clientID, all); err != nil {
		return err
	}
	_, err := s.revokePending(ctx, userID, clientID, all)
	return err
}

// RevokeUser revokes the families of userID (with any client) for which
// match answers true, and the families of every outstanding code of
// userID (a code is redeemed against the grant as it stood when issued),
// and returns how many it revoked.
func (s *Store) RevokeUser(ctx context.Context, userID int64, match func(grant.Family) bool) (int, error) {
	n, err := s.revokePending(ctx, userID, 0, match)
	if err != nil {
		return n, err
	}
	clients, err := s.rdb.SMembers(ctx, clientsKey(userID)).Result()
	if err != nil {
		return n, fmt.Errorf("listing a user's refresh tokens: %w", err)
	}
	for _, c := range clients {
		clientID, err := strconv.ParseInt(c, 10, 64)
		if err != nil {
			continue
		}
		k, err := s.revokeWhere(ctx, userID, clientID, match)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// revokeWhere revokes the live families of userID and clientID that match,
// dropping from the index those that ended.
func (s *Store) revokeWhere(ctx context.Context, userID, clientID int64, match func(grant.Family) bool) (int, error) {
	idx := indexKey(userID, clientID)
	ids, err := s.rdb.SMembers(ctx, idx).Result()
	if err != nil {
		return 0, fmt.Errorf("listing refresh tokens: %w", err)
	}
	n := 0
	for _, id := range ids {
		h, err := s.read(ctx, id)
		if errors.Is(err, grant.ErrRefreshInvalid) {
			_ = s.rdb.SRem(ctx, idx, id).Err()
			continue
		}
		if err != nil {
			return n, err
		}
		if !match(h.family(id)) {
			continue
		}
		if err := s.RevokeFamily(ctx, id); err != nil {
			return n, err
		}
		n++
		if err := s.rdb.SRem(ctx, idx, id).Err(); err != nil {
			return n, fmt.Errorf("updating refresh-token index: %w", err)
		}
	}
	return n, nil
}
