package tokenauth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokenauth"
)

// feedServer is auth's revocation feed: entry i has cursor i+1, and
// ?after=n answers the entries after n with next = the last cursor.
type feedServer struct {
	mu       sync.Mutex
	entries  []map[string]any
	afters   []string
	answer   func(w http.ResponseWriter) // set: a broken answer instead
	page     int                         // > 0: at most this many entries an answer, with more
	epoch    string                      // sent as the feed's epoch when set
	requests atomic.Int32
	srv      *httptest.Server
}

func newFeedServer(t *testing.T) *feedServer {
	t.Helper()
	f := &feedServer{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests.Add(1)
		f.afters = append(f.afters, r.URL.Query().Get("after"))
		if f.answer != nil {
			f.answer(w)
			return
		}
		after, _ := strconv.Atoi(r.URL.Query().Get("after"))
		list := []map[string]any{}
		if after < len(f.entries) {
			list = f.entries[after:]
		}
		next, more := len(f.entries), false
		if f.page > 0 && len(list) > f.page {
			list, next, more = list[:f.page], after+f.page, true
		}
		w.Header().Set("Content-Type", "application/json")
		answer := map[string]any{"next": next, "more": more, "revoked": list}
		if f.epoch != "" {
			answer["epoch"] = f.epoch
		}
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// newListFeed is a feed that answers every poll with the same n entries,
// entry i naming the jti and expiry entry(i) gives: a list too large to build
// with revoke. Its server is the caller's to close.
func newListFeed(n int, entry func(i int) (jti string, exp time.Time)) *feedServer {
	f := &feedServer{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var sb strings.Builder
		sb.WriteString(`{"next":1,"revoked":[`)
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			jti, exp := entry(i)
			fmt.Fprintf(&sb, `{"jti":"%s","exp":%d}`, jti, exp.Unix())
		}
		sb.WriteString(`]}`)
		f.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(sb.String()))
	}))
	return f
}

func (f *feedServer) revoke(claim, value string, exp time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, map[string]any{claim: value, "exp": exp.Unix()})
}

func (f *feedServer) breakWith(answer func(w http.ResponseWriter)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = answer
}

// polled waits until the validator has taken in an answer the feed gave
// after this call: a poll that started after it has completed.
func (f *feedServer) polled(t *testing.T) {
	t.Helper()
	target := f.requests.Load() + 2 // the next poll started after now, then the one after it
	deadline := time.Now().Add(5 * time.Second)
	for f.requests.Load() < target {
		if time.Now().After(deadline) {
			t.Fatal("the validator stopped polling the feed")
		}
		time.Sleep(time.Millisecond) // the poll interval is 5ms; this only samples it
	}
}

// clock is a settable clock for the validator.
type clock struct{ now atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.now.Load()) }
func (c *clock) advance(d time.Duration) { c.now.Add(int64(d)) }
func newClock() *clock                   { c := &clock{}; c.now.Store(time.Now().UnixNano()); return c }
func token(t *testing.T, key jwk.Key, jti, sid string) string {
	t.Helper()
	o := defaults()
	o.jti, o.sid = jti, sid
	return sign(t, key, o)
}

func startWithFeed(t *testing.T, ks *keyServer, f *feedServer, cfg tokenauth.Config) *tokenauth.Validator {
	t.Helper()
	cfg.JWKSURL, cfg.Issuer, cfg.Audience = ks.srv.URL, issuer, audience
	cfg.RevocationsURL, cfg.RevocationPoll = f.srv.URL+"/internal/revocations", 5*time.Millisecond
	if cfg.Leeway == 0 {
		cfg.Leeway = 5 * time.Second
	}
	v, err := tokenauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v.Start(ctx)
	f.polled(t)
	return v
}

func wantRevoked(t *testing.T, v *tokenauth.Validator, tok string) {
	t.Helper()
	if _, err := v.Validate(context.Background(), tok); !errors.Is(err, tokenauth.ErrRevoked) {
		t.Fatalf("want ErrRevoked, got %v", err)
	}
}

func wantValid(t *testing.T, v *tokenauth.Validator, tok string) {
	t.Helper()
	if _, err := v.Validate(context.Background(), tok); err != nil {
		t.Fatalf("want valid, got %v", err)
	}
}

func TestRevocationFeed(t *testing.T) {
	ks := newKeyServer(t, "k1")
	hour := time.Now().Add(time.Hour)

	t.Run("a listed jti is refused from the next poll on, cached or not; others are not", func(t *testing.T) {
		f := newFeedServer(t)
		v := startWithFeed(t, ks, f, tokenauth.Config{})
		revoked, other := token(t, ks.priv, "jti-a", ""), token(t, ks.priv, "jti-b", "")
		wantValid(t, v, revoked) // now cached
		wantValid(t, v, other)
		f.revoke("jti", "jti-a", hour)
		f.polled(t)
		wantRevoked(t, v, revoked)
		wantRevoked(t, v, token(t, ks.priv, "jti-a", "")) // not cached: another token with the jti
		wantValid(t, v, other)
		if _, err := v.Validate(context.Background(), revoked); !errors.Is(err, tokenauth.ErrInvalid) {
			t.Fatalf("ErrRevoked must be an ErrInvalid: %v", err)
		}
	})

	t.Run("a listed sid refuses every token carrying it", func(t *testing.T) {
		f := newFeedServer(t)
		v := startWithFeed(t, ks, f, tokenauth.Config{})
		first, second := token(t, ks.priv, "j1", "family-1"), token(t, ks.priv, "j2", "family-1")
		otherFamily := token(t, ks.priv, "j3", "family-2")
		wantValid(t, v, first)
		f.revoke("sid", "family-1", hour)
		f.polled(t)
		wantRevoked(t, v, first)
		wantRevoked(t, v, second)
		wantValid(t, v, otherFamily)
	})

	t.Run("polls ask from the previous answer's next", func(t *testing.T) {
		f := newFeedServer(t)
		f.revoke("jti", "x", hour)
		f.revoke("jti", "y", hour)
		startWithFeed(t, ks, f, tokenauth.Config{})
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.afters) < 2 || f.afters[0] != "0" || f.afters[1] != "2" {
			t.Fatalf("after parameters %q", f.afters)
		}
	})

	t.Run("repeated entries are merged", func(t *testing.T) {
		f := newFeedServer(t)
		v := startWithFeed(t, ks, f, tokenauth.Config{})
		f.breakWith(func(w http.ResponseWriter) { // a feed that always answers everything
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"next":1,"revoked":[{"jti":"again","exp":%d},{"jti":"again","exp":%d}]}`, hour.Unix(), hour.Unix())
		})
		f.polled(t)
		f.polled(t)
		wantRevoked(t, v, token(t, ks.priv, "again", ""))
	})

	t.Run("an entry is forgotten once tokens with its exp have expired", func(t *testing.T) {
		f := newFeedServer(t)
		c := newClock()
		v := startWithFeed(t, ks, f, tokenauth.Config{Now: c.Now, Leeway: 5 * time.Second})
		tok := token(t, ks.priv, "short", "") // expires in an hour; the feed says the jti matters for 10s
		f.revoke("jti", "short", c.Now().Add(10*time.Second))
		f.polled(t)
		wantRevoked(t, v, tok)
		c.advance(14 * time.Second) // within exp + leeway: still needed
		f.polled(t)
		wantRevoked(t, v, tok)
		c.advance(2 * time.Second)
		f.polled(t)
		wantValid(t, v, tok)
	})

	t.Run("a broken answer keeps the list and adds nothing", func(t *testing.T) {
		valid := fmt.Sprintf(`{"next":100,"revoked":[{"jti":"in-broken-answer","exp":%d}]}`, hour.Unix())
		answers := map[string]func(w http.ResponseWriter){
			"status 500": func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte(valid))
			},
			"HTML": func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte(valid))
			},
			"larger than 1 MiB": func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(append([]byte(valid), bytes.Repeat([]byte(" "), 1<<20)...))
			},
			"not JSON": func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"next":100,"revoked":[{"jti":"in-broken-answer"`))
			},
			"JSON of another shape": func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"next":100,"revoked":{"jti":"in-broken-answer"}}`))
			},
		}
		for name, answer := range answers {
			t.Run(name, func(t *testing.T) {
				f := newFeedServer(t)
				f.revoke("jti", "listed", hour)
				v := startWithFeed(t, ks, f, tokenauth.Config{})
				listed := token(t, ks.priv, "listed", "")
				wantRevoked(t, v, listed)
				f.breakWith(answer)
				f.polled(t)
				f.polled(t)
				wantRevoked(t, v, listed)
				wantValid(t, v, token(t, ks.priv, "in-broken-answer", ""))
			})
		}
	})

	t.Run("a failing feed is logged once a minute and, once read, readiness does not depend on it", func(t *testing.T) {
		f := newFeedServer(t)
		var logs testkit.SyncBuffer
		v := startWithFeed(t, ks, f, tokenauth.Config{Log: slog.New(slog.NewJSONHandler(&logs, nil))})
		f.breakWith(func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) })
		for range 5 {
			f.polled(t)
		}
		if n := strings.Count(logs.String(), "revocation feed"); n != 1 {
			t.Fatalf("%d log lines for failed polls:\n%s", n, logs.String())
		}
		if err := v.Ready(context.Background()); err != nil {
			t.Fatalf("not ready while the feed fails: %v", err)
		}
		wantValid(t, v, token(t, ks.priv, "j", ""))
	})

	t.Run("the middleware answers a revoked token like an invalid one", func(t *testing.T) {
		f := newFeedServer(t)
		f.revoke("jti", "gone", hour)
		v := startWithFeed(t, ks, f, tokenauth.Config{})
		gin.SetMode(gin.TestMode)
		r := gin.New()
		r.GET("/x", v.Middleware(), func(c *gin.Context) { c.Status(http.StatusNoContent) })
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.Header.Set("Authorization", "Bearer "+token(t, ks.priv, "gone", ""))
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		var body map[string]map[string]map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != http.StatusUnauthorized || body["errors"]["authentication"]["message"] != "Invalid token." ||
			!strings.Contains(w.Header().Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("%d %s %q", w.Code, w.Body, w.Header().Get("WWW-Authenticate"))
		}
	})
}

func TestRevocationsURLMustBeHTTP(t *testing.T) {
	for _, u := range []string{"ftp://auth/internal/revocations", "auth:9090/internal/revocations", "http://"} {
		if _, err := tokenauth.New(tokenauth.Config{JWKSURL: "http://auth/jwks", Issuer: issuer, Audience: audience, RevocationsURL: u}); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}

// BenchmarkValidateCachedWithRevocations is the hot path with a feed of
// 10,000 revoked jtis held: it must not allocate.
func BenchmarkValidateCachedWithRevocations(b *testing.B) {
	t := &testing.T{}
	ks := newKeyServer(t, "k1")
	defer ks.srv.Close()
	f := newListFeed(10_000, func(int) (string, time.Time) { return rand.Text(), time.Now().Add(time.Hour) })
	defer f.srv.Close()
	v, _ := tokenauth.New(tokenauth.Config{JWKSURL: ks.srv.URL, Issuer: issuer, Audience: audience,
		RevocationsURL: f.srv.URL, RevocationPoll: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v.Start(ctx)
	tok := token(t, ks.priv, "not-listed", "family")
	if _, err := v.Validate(ctx, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Validate(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRevocationFeedBurst: a burst larger than one page of the feed is read
// in one poll, page after page, not one page per poll interval.
func TestRevocationFeedBurst(t *testing.T) {
	ks := newKeyServer(t, "k1")
	f := newFeedServer(t)
	f.page = 1
	hour := time.Now().Add(time.Hour)
	var toks []string
	for i := range 3 {
		jti := "burst-" + strconv.Itoa(i)
		f.revoke("jti", jti, hour)
		toks = append(toks, token(t, ks.priv, jti, ""))
	}
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: ks.srv.URL, Issuer: issuer, Audience: audience, Leeway: 5 * time.Second,
		RevocationsURL: f.srv.URL + "/internal/revocations", RevocationPoll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v.Start(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for f.requests.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("one poll read %d pages of a 3-page burst", f.requests.Load())
		}
		time.Sleep(time.Millisecond)
	}
	for _, tok := range toks {
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, err := v.Validate(context.Background(), tok)
			if errors.Is(err, tokenauth.ErrRevoked) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("want ErrRevoked, got %v", err)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
