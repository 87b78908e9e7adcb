package suite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventreg/eventreg/bench/internal/procstat"
	"github.com/eventreg/eventreg/e2e/stack"
)

// FloodOptions configure RevokeFlood.
type FloodOptions struct {
	Root, StateDir string
	// Duration of the flood (a minute for the record; shorter for a quick run).
	Duration time.Duration
	// Workers mint and revoke concurrently.
	Workers  int
	LogLevel string
	Env      map[string]string
	Progress io.Writer
}

// FloodSample is one reading taken during the flood.
type FloodSample struct {
	At           time.Duration
	Revoked      int64 // revocations answered 200 so far
	Refused      int64 // token or revocation requests answered 429 so far
	UsersRSS     int64 // bytes: the resource replica polling the feed
	RedisKeys    int64
	FeedEntries  int64 // auth_revocation_feed_entries
	ReplicaHeld  int64 // tokenauth_revocations_held of users
	RedisUsedMem int64 // bytes
}

// RevokeFlood is the revoke-flood scenario (`make bench ARGS='-scenario
// revoke-flood'`): one service app mints access tokens and revokes each as
// fast as it can through the gateway for Duration, while the users
// replica's memory, Redis's keys and memory, and the feed's entries are
// read every few seconds. It proves what each holds stays flat: a
// revocation is one cutoff per client, never an entry per token, and the
// token and revocation endpoints limit each client.
func RevokeFlood(ctx context.Context, o FloodOptions) ([]FloodSample, error) {
	say := func(format string, args ...any) { fmt.Fprintf(o.Progress, format+"\n", args...) }
	sec, err := loadSecrets(filepath.Join(o.StateDir, "secrets.json"))
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(o.StateDir, "redis")); err != nil {
		return nil, fmt.Errorf("clearing the last run's Redis: %w", err)
	}
	env := map[string]string{"LOG_LEVEL": o.LogLevel}
	for k, v := range o.Env {
		env[k] = v
	}
	say("launching the system (databases bench_flood_*) ...")
	s, err := stack.Launch(ctx, stack.Config{Root: o.Root, Dir: o.StateDir, Build: true, DatabasePrefix: "bench_flood",
		Fixture: filepath.Join(o.Root, "deploy", "fixtures", "demo.json"), ConventionID: conventionID,
		KeyEncryptionKey: sec.KeyEncryptionKey, ClientSecretKey: sec.ClientSecretKey, CursorKey: sec.CursorKey,
		Env: env, Stdout: o.Progress})
	if err != nil {
		return nil, fmt.Errorf("launching the system: %w", err)
	}
	defer s.Close()

	var revoked, refused, failed atomic.Int64
	var firstErr sync.Once
	hc := &http.Client{Timeout: 10 * time.Second}
	fctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for fctx.Err() == nil {
				st, body := postForm(fctx, hc, s.GatewayURL+"/api/oauth/token", url.Values{"grant_type": {"client_credentials"}})
				var tok struct {
					AccessToken string `json:"access_token"`
				}
				switch {
				case st == http.StatusTooManyRequests:
					refused.Add(1)
					continue
				case st != http.StatusOK || json.Unmarshal(body, &tok) != nil:
					if fctx.Err() == nil {
						failed.Add(1)
						firstErr.Do(func() { say("first failure: token %d %s", st, body) })
					}
					continue
				}
				switch st, body := postForm(fctx, hc, s.GatewayURL+"/api/oauth/revoke", url.Values{"token": {tok.AccessToken}}); st {
				case http.StatusOK:
					revoked.Add(1)
				case http.StatusTooManyRequests:
					refused.Add(1)
				default:
					if fctx.Err() == nil {
						failed.Add(1)
						firstErr.Do(func() { say("first failure: revoke %d %s", st, body) })
					}
				}
			}
		}()
	}

	var samples []FloodSample
	start := time.Now()
	sample := func() {
		smp := FloodSample{At: time.Since(start).Round(time.Second), Revoked: revoked.Load(), Refused: refused.Load()}
		if m, err := procstat.Read(s.Services["users"].PID()); err == nil {
			smp.UsersRSS = m.RSS
		}
		smp.RedisKeys = redisInt(ctx, s.RedisURL, "DBSIZE", "")
		smp.RedisUsedMem = redisInt(ctx, s.RedisURL, "INFO", "used_memory:")
		smp.FeedEntries = metric(ctx, hc, s.Services["auth"].InternalURL, "auth_revocation_feed_entries")
		smp.ReplicaHeld = metric(ctx, hc, s.Services["users"].InternalURL, "tokenauth_revocations_held")
		samples = append(samples, smp)
		say("%5s  revoked %7d  refused(429) %7d  users RSS %6.1f MiB  Redis keys %5d  Redis used %6.1f MiB  feed entries %4d  users holds %4d",
			smp.At, smp.Revoked, smp.Refused, float64(smp.UsersRSS)/(1<<20), smp.RedisKeys, float64(smp.RedisUsedMem)/(1<<20), smp.FeedEntries, smp.ReplicaHeld)
	}
	say("flooding: %d workers mint and revoke client %s's tokens for %s", o.Workers, serviceClientID, o.Duration)
	sample()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for fctx.Err() == nil {
		select {
		case <-fctx.Done():
		case <-tick.C:
			sample()
		}
	}
	wg.Wait()
	// One poll interval later the replica has read the last entries.
	time.Sleep(3 * time.Second)
	sample()
	if n := failed.Load(); n > 0 {
		say("%d requests failed with neither 200 nor 429", n)
	}
	return samples, nil
}

// postForm posts form as the demo service client through the gateway.
func postForm(ctx context.Context, hc *http.Client, u string, form url.Values) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(serviceClientID, serviceClientSecret)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, b
}

// redisInt runs a redis-cli command and reads an integer answer, or the
// value of the INFO field prefix (-1 when it cannot).
func redisInt(ctx context.Context, redisURL, cmd, field string) int64 {
	out, err := exec.CommandContext(ctx, "redis-cli", "-u", redisURL, cmd).Output()
	if err != nil {
		return -1
	}
	text := strings.TrimSpace(string(out))
	if field != "" {
		sc := bufio.NewScanner(strings.NewReader(text))
		text = ""
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), field); ok {
				text = v
			}
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// metric reads an unlabelled metric from a service's /metrics (-1 when it
// cannot).
func metric(ctx context.Context, hc *http.Client, internalURL, name string) int64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, internalURL+"/metrics", nil)
	if err != nil {
		return -1
	}
	resp, err := hc.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int64(f)
			}
		}
	}
	return -1
}
