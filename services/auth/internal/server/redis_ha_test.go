package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/refreshtoken"
)

// exerciseRedisFlows runs every flow that keeps state in Redis: a browser
// session and a code, refresh rotation and reuse detection (multi-key
// scripts), the revocation feed, and client-authentication throttling.
func exerciseRedisFlows(t *testing.T, s *authtest.Server) {
	badge := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	tok := grant(t, s, badge, authtest.Alice)
	st, m := refreshWith(t, s, tok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret)
	if st != 200 {
		t.Fatalf("refresh: %d %v", st, m)
	}
	if st, _ := refreshWith(t, s, tok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret); st != 400 {
		t.Fatalf("reuse accepted: %d", st)
	}
	if st, _ := refreshWith(t, s, m["refresh_token"].(string), authtest.BadgeID, authtest.BadgeSecret); st != 400 {
		t.Fatalf("the family survived its reuse: %d", st)
	}
	if !feedHas(t, s, "sid", claimsOf(t, tok.AccessToken)["sid"].(string)) {
		t.Fatal("the revoked family is not on the feed")
	}
	for i := 0; i < 12; i++ {
		post(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", authtest.ServiceID, "wrong-secret-wrong-secret-wrong-secret")
	}
	if st, _, body := post(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", authtest.ServiceID, "wrong-secret-wrong-secret-wrong-secret"); st != http.StatusTooManyRequests {
		t.Fatalf("throttling: %d %s", st, body)
	}
}

// failover kills a Redis master while refreshes run, and checks that a
// refresh token issued before the failover refreshes after it. It returns
// how long refreshes failed.
func failover(t *testing.T, s *authtest.Server, kill func(family string)) time.Duration {
	t.Helper()
	badge := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	before := grant(t, s, badge, authtest.Bob)
	// Load: four apps' sessions refreshing in turn.
	var wg sync.WaitGroup
	var stop atomic.Bool
	var ok, unavailable, other atomic.Int64
	for i := 0; i < 4; i++ {
		rt := grant(t, s, badge, authtest.Alice).RefreshToken
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				st, m := tryRefresh(s, rt)
				switch {
				case st == 200:
					ok.Add(1)
					rt = m["refresh_token"].(string)
				case st == 503:
					unavailable.Add(1)
				case st == 0: // no answer: the request itself failed
					unavailable.Add(1)
				default:
					other.Add(1) // a rotation whose answer was lost: the retry is a reuse
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	time.Sleep(time.Second) // replication is asynchronous: let it carry the family over
	family, _ := refreshtoken.FamilyOfToken(before.RefreshToken)
	kill(family)
	start := time.Now()
	var down time.Duration
	for {
		st, m := refreshWith(t, s, before.RefreshToken, authtest.BadgeID, authtest.BadgeSecret)
		if st == 200 {
			down = time.Since(start)
			break
		}
		if st != 503 {
			t.Fatalf("the token issued before the failover: %d %v", st, m)
		}
		if time.Since(start) > 45*time.Second {
			logs := s.Logs.String()
			t.Fatalf("refreshes did not recover within 45s; auth's last log lines:\n%s", logs[max(0, len(logs)-1500):])
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if other.Load() > 0 {
		t.Logf("a refresh whose rotation committed on the old master but whose answer was lost was retried with the old token: reuse detection ended %d chains", other.Load())
	}
	t.Logf("refreshes failed for %v after the master was killed; under load: %d ok, %d answered 503, %d chains lost to a retried rotation",
		down.Round(10*time.Millisecond), ok.Load(), unavailable.Load(), other.Load())
	return down
}

// tryRefresh is refreshWith for goroutines: it never fails the test (0: no answer).
func tryRefresh(s *authtest.Server, rt string) (int, map[string]any) {
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/oauth/token", strings.NewReader(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}.Encode()))
	req.Header.Set("Content-Type", form)
	req.SetBasicAuth(authtest.BadgeID, authtest.BadgeSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestOAuthOnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: starts a Redis Cluster")
	}
	c := testkit.StartRedisCluster(t, 1500*time.Millisecond)
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"REDIS_URL": c.URL, "REDIS_CLUSTER": "true", "CLIENT_AUTH_FAILURES": "10"}})
	t.Run("every flow runs on a cluster: multi-key scripts stay in one slot", func(t *testing.T) { exerciseRedisFlows(t, s) })
	t.Run("a master is killed: its replica takes over, and a token issued before still refreshes", func(t *testing.T) {
		failover(t, s, func(family string) { c.Nodes[c.MasterOf(t, "auth:rt:{"+family+"}")].Kill() })
	})
}

func TestOAuthOnRedisSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: starts Redis with Sentinel")
	}
	rs := testkit.StartRedisSentinel(t, time.Second)
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"REDIS_URL": rs.URL, "CLIENT_AUTH_FAILURES": "10"}})
	t.Run("every flow runs through Sentinel", func(t *testing.T) { exerciseRedisFlows(t, s) })
	t.Run("the master is killed: Sentinel promotes the replica, and a token issued before still refreshes", func(t *testing.T) {
		failover(t, s, func(string) { rs.Master.Kill() })
	})
}
