package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	oauthgrant "github.com/eventreg/eventreg/services/auth/internal/grant"
)

// exerciseRedisFlows runs every flow that keeps state in Redis: a browser
// session and a code, refresh rotation and reuse detection (multi-key
// scripts), the revocation feed, and client-authentication throttling.
func exerciseRedisFlows(t *testing.T, s *authtest.Server) {
	badge := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	tok := grant(t, s, badge, authtest.Alice)
	rotateThenReuse(t, s, tok)
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

// What a failover may cost, asserted by failover (docs/reliability.md states
// the same).
const (
	// failoverMargin is added to the configured timeout (Sentinel's
	// down-after-milliseconds, a Cluster's cluster-node-timeout) for the
	// steps that follow it on loopback: the other sentinels or masters
	// agreeing the master is down and electing who acts (about a second),
	// the replica's promotion (Sentinel's randomized start and its INFO
	// poll, a Cluster replica's election delay: up to a second each), and
	// auth's client finding the new master (Sentinel's switch-master
	// message, the Cluster client's slot map re-read every second): about
	// 4 s on an idle machine, doubled for a test run sharing its cores.
	failoverMargin = 8 * time.Second
	// issuedBefore is the age, at the kill, of the refresh token that must
	// still refresh after the failover.
	issuedBefore = 2500 * time.Millisecond
	// lossWindow bounds what asynchronous replication may lose: a refresh
	// chain may end (its next refresh is invalid_grant) only when the token
	// it held was issued less than this before the kill, and at most that
	// one rotation per chain. Replication on loopback lags by milliseconds;
	// the bound leaves room for a loaded machine.
	lossWindow = time.Second
)

// chain is one app's refresh loop during a failover.
type chain struct {
	family      string
	onKilled    bool      // its keys live on the master that is killed
	issued      time.Time // when the token it holds was answered (200)
	retried     bool      // it presents that token again after a 503
	ok, failed  int       // answers 200 and 503
	servedAfter bool      // a refresh sent after the kill answered 200
	lost        bool      // its token was refused as invalid_grant after the kill
	ended       bool      // its loop stopped (lost, or a problem)
}

// failover kills a Redis master while apps refresh in a loop and checks what
// it costs against the bounds above: recovery within timeout +
// failoverMargin (measured with a refresh token issued issuedBefore the
// kill, which must refresh after it), every answer meanwhile a 200 or a 503
// temporarily_unavailable (anything else, a 500 included, fails), and the
// refresh chains lost within the lossWindow bound. onKilled tells whether a
// family's keys live on the master kill stops; wantOnKilled of the four
// chains are made to. It returns the time to recover.
func failover(t *testing.T, s *authtest.Server, timeout time.Duration, onKilled func(family string) bool, wantOnKilled int, kill func()) time.Duration {
	t.Helper()
	badge := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	// Four apps' sessions, wantOnKilled of them with their keys on the master
	// to be killed (the others on masters that keep running).
	var chains []*chain
	tokens := map[*chain]string{}
	on := 0
	for tries := 0; len(chains) < 4; tries++ {
		if tries == 60 {
			t.Fatalf("60 grants gave %d refresh chains, %d of them on the master to be killed", len(chains), on)
		}
		rt := grant(t, s, badge, authtest.Alice).RefreshToken
		fam, _ := oauthgrant.FamilyOfToken(rt)
		c := &chain{family: fam, onKilled: onKilled(fam), issued: time.Now()}
		if (c.onKilled && on == wantOnKilled) || (!c.onKilled && len(chains)-on == 4-wantOnKilled) {
			continue
		}
		if c.onKilled {
			on++
		}
		chains = append(chains, c)
		tokens[c] = rt
	}
	// The token that must survive: on the master to be killed, issued
	// issuedBefore the kill.
	var before *oauth2.Token
	for tries := 0; before == nil; tries++ {
		if tries == 20 {
			t.Fatal("20 grants gave no refresh token on the master to be killed")
		}
		tok := grant(t, s, badge, authtest.Bob)
		if family, _ := oauthgrant.FamilyOfToken(tok.RefreshToken); onKilled(family) {
			before = tok
		}
	}
	issued := time.Now()

	// Load: four apps' sessions refreshing in turn.
	var (
		mu       sync.Mutex
		problems []string
		killedAt time.Time // zero until the kill
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	var stop atomic.Bool
	for _, c := range chains {
		rt := tokens[c]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { mu.Lock(); c.ended = true; mu.Unlock() }()
			for !stop.Load() {
				sent := time.Now()
				st, m := tryRefresh(s, rt)
				mu.Lock()
				after := !killedAt.IsZero() && sent.After(killedAt)
				kill := killedAt
				mu.Unlock()
				switch {
				case st == 200:
					mu.Lock()
					c.ok++
					c.servedAfter = c.servedAfter || after
					c.issued, c.retried = time.Now(), false
					mu.Unlock()
					rt = m["refresh_token"].(string)
				case st == 503 && m["error"] == "temporarily_unavailable":
					mu.Lock()
					c.failed++
					c.retried = true
					mu.Unlock()
				case st == 400 && m["error"] == "invalid_grant" && after:
					// The failover lost the token this chain holds.
					mu.Lock()
					c.lost = true
					servedAfter, age := c.servedAfter, kill.Sub(c.issued)
					mu.Unlock()
					if servedAfter {
						problem("chain %s refused after the new master had served it: a write after the failover was lost", c.family)
					}
					if age > lossWindow {
						problem("chain %s lost a token issued %v before the kill (bound %v)", c.family, age.Round(time.Millisecond), lossWindow)
					}
					return
				default:
					problem("chain %s: refresh answered %d %v (sent %s the kill)", c.family, st, m, map[bool]string{true: "after", false: "before"}[after])
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	time.Sleep(time.Until(issued.Add(issuedBefore)))

	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	kill()
	age := killedAt.Sub(issued)
	bound := timeout + failoverMargin
	var down time.Duration
	for {
		st, m := refreshWith(t, s, before.RefreshToken, authtest.BadgeID, authtest.BadgeSecret)
		if st == 200 {
			down = time.Since(killedAt)
			break
		}
		if st != 503 || m["error"] != "temporarily_unavailable" {
			t.Fatalf("the token issued %v before the failover: %d %v", age.Round(time.Millisecond), st, m)
		}
		if time.Since(killedAt) > 3*bound {
			logs := s.Logs.String()
			t.Fatalf("refreshes did not recover within %v; auth's last log lines:\n%s", 3*bound, logs[max(0, len(logs)-1500):])
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Every chain still running refreshes once more after the recovery: a
	// chain is lost, if at all, at its first refresh on the new master.
	recovered := time.Now()
	deadline := recovered.Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		pending := 0
		for _, c := range chains {
			if !c.ended && c.issued.Before(recovered) {
				pending++
			}
		}
		mu.Unlock()
		if pending == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	var ok, unavailable, onKilledMaster, lost, lostAcknowledged int
	for _, c := range chains {
		ok, unavailable = ok+c.ok, unavailable+c.failed
		if c.onKilled {
			onKilledMaster++
		}
		if c.lost {
			lost++
			if !c.retried {
				lostAcknowledged++ // the token came with a 200 the new master never saw
			}
			if !c.onKilled {
				problem("chain %s lost, though its keys were on a master that kept running", c.family)
			}
		} else if !c.servedAfter {
			problem("chain %s was not served again within 10 s of the recovery", c.family)
		}
	}
	t.Logf("failover: refreshes back %.2f s after the kill (bound: timeout %v + margin %v = %v); a token issued %.1f s before the kill refreshed after it; "+
		"under load: %d refreshes answered 200, %d answered 503 temporarily_unavailable, 0 other; chains lost: %d of %d (%d on the killed master; %d whose acknowledged rotation the new master lacked, %d whose rotation answered 503 had reached it), bound %d chains, each losing only a token issued within %v of the kill",
		down.Seconds(), timeout, failoverMargin, bound, age.Seconds(), ok, unavailable, lost, len(chains), onKilledMaster, lostAcknowledged, lost-lostAcknowledged, onKilledMaster, lossWindow)
	for _, p := range problems {
		t.Error(p)
	}
	if down > bound {
		t.Errorf("refreshes recovered %.2f s after the kill, beyond the bound %v (timeout %v + margin %v)", down.Seconds(), bound, timeout, failoverMargin)
	}
	return down
}

// tryRefresh is refreshWith for goroutines: it never fails the test (0: no
// answer, within 10 s).
func tryRefresh(s *authtest.Server, rt string) (int, map[string]any) {
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/oauth/token", strings.NewReader(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}.Encode()))
	req.Header.Set("Content-Type", form)
	req.SetBasicAuth(authtest.BadgeID, authtest.BadgeSecret)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req) // a hang is no answer
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestOAuthOnRedisCluster(t *testing.T) {
	const nodeTimeout = 1500 * time.Millisecond
	c := testkit.StartRedisCluster(t, nodeTimeout)
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"REDIS_URL": c.URL, "REDIS_CLUSTER": "true", "CLIENT_AUTH_FAILURES": "10"}})
	t.Run("every flow runs on a cluster: multi-key scripts stay in one slot", func(t *testing.T) { exerciseRedisFlows(t, s) })
	t.Run("a master is killed: its replica takes over, and a token issued before still refreshes", func(t *testing.T) {
		// The master that serves some refresh-token family; two of the four
		// apps' chains have their keys there.
		victim := c.MasterOf(t, "auth:rt:{victim}")
		failover(t, s, nodeTimeout, func(family string) bool { return c.MasterOf(t, "auth:rt:{"+family+"}") == victim }, 2,
			func() { c.Nodes[victim].Kill() })
	})
}

func TestOAuthOnRedisSentinel(t *testing.T) {
	const downAfter = time.Second
	rs := testkit.StartRedisSentinel(t, downAfter)
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"REDIS_URL": rs.URL, "CLIENT_AUTH_FAILURES": "10"}})
	t.Run("every flow runs through Sentinel", func(t *testing.T) { exerciseRedisFlows(t, s) })
	t.Run("the master is killed: Sentinel promotes the replica, and a token issued before still refreshes", func(t *testing.T) {
		failover(t, s, downAfter, func(string) bool { return true }, 4, rs.Master.Kill)
	})
}
