package servicetoken

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

var (
	shared = Config{Key: strings.Repeat("k", MinKeyLength)}
	other  = Config{Key: strings.Repeat("o", MinKeyLength)}
)

func TestConfigValidate(t *testing.T) {
	for name, c := range map[string]Config{
		"missing":            {},
		"short":              {Key: "short"},
		"short previous key": {Key: shared.Key, PreviousKey: "short"},
	} {
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := (Config{Key: shared.Key, PreviousKey: other.Key}).Validate(); err != nil {
		t.Errorf("a good configuration: %v", err)
	}
}

func TestVerify(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	users := NewVerifier(shared, "users")
	users.now = func() time.Time { return now }
	auth := NewSigner(shared, "auth")
	auth.now = users.now

	t.Run("a token for the service from a holder of the key names the caller", func(t *testing.T) {
		tok, err := auth.Token("users")
		if err != nil {
			t.Fatal(err)
		}
		if caller, err := users.Verify(tok); err != nil || caller != "auth" {
			t.Fatalf("caller %q, error %v", caller, err)
		}
	})
	t.Run("a token for another service is refused", func(t *testing.T) {
		tok, _ := auth.Token("volunteers")
		if _, err := users.Verify(tok); !errors.Is(err, ErrInvalid) {
			t.Fatalf("error %v, want ErrInvalid", err)
		}
	})
	t.Run("a token signed with another key is refused", func(t *testing.T) {
		forger := NewSigner(other, "auth")
		forger.now = users.now
		tok, _ := forger.Token("users")
		if _, err := users.Verify(tok); !errors.Is(err, ErrInvalid) {
			t.Fatalf("error %v, want ErrInvalid", err)
		}
	})
	t.Run("an expired token is refused as expired", func(t *testing.T) {
		tok, _ := auth.sign("users", now.Add(-Lifetime-Leeway-time.Second), Lifetime)
		if _, err := users.Verify(tok); !errors.Is(err, ErrExpired) {
			t.Fatalf("error %v, want ErrExpired", err)
		}
	})
	t.Run("a token made to last longer than Lifetime is refused", func(t *testing.T) {
		tok, _ := auth.sign("users", now, 24*time.Hour)
		if _, err := users.Verify(tok); !errors.Is(err, ErrInvalid) {
			t.Fatalf("error %v, want ErrInvalid", err)
		}
	})
	t.Run("the previous key is accepted during a key change", func(t *testing.T) {
		old := NewSigner(other, "volunteers")
		old.now = users.now
		tok, _ := old.Token("users")
		changing := NewVerifier(Config{Key: shared.Key, PreviousKey: other.Key}, "users")
		changing.now = users.now
		if caller, err := changing.Verify(tok); err != nil || caller != "volunteers" {
			t.Fatalf("caller %q, error %v", caller, err)
		}
	})
	t.Run("a token of another type signed with the key is refused", func(t *testing.T) {
		tok, _ := jwt.NewBuilder().Issuer("auth").Audience([]string{"users"}).IssuedAt(now).Expiration(now.Add(time.Minute)).Build()
		hdr := jws.NewHeaders()
		_ = hdr.Set(jws.TypeKey, "at+jwt")
		raw, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256, hmacKey(shared.Key), jws.WithProtectedHeaders(hdr)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := users.Verify(string(raw)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("error %v, want ErrInvalid", err)
		}
	})
	t.Run("the raw key, not the derived one, signs nothing valid", func(t *testing.T) {
		tok, _ := jwt.NewBuilder().Issuer("auth").Audience([]string{"users"}).IssuedAt(now).Expiration(now.Add(time.Minute)).Build()
		hdr := jws.NewHeaders()
		_ = hdr.Set(jws.TypeKey, Type)
		raw, _ := jwt.Sign(tok, jwt.WithKey(jwa.HS256, []byte(shared.Key), jws.WithProtectedHeaders(hdr)))
		if _, err := users.Verify(string(raw)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("error %v, want ErrInvalid", err)
		}
	})
	t.Run("garbage is refused", func(t *testing.T) {
		for _, raw := range []string{"", "a.b.c", "eyJhbGciOiJub25lIn0.eyJhdWQiOiJ1c2VycyJ9.", strings.Repeat("a.", 2000)} {
			if _, err := users.Verify(raw); !errors.Is(err, ErrInvalid) {
				t.Errorf("%.20q: error %v, want ErrInvalid", raw, err)
			}
		}
	})
}

func TestSignerRenewsAtHalfLife(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s := NewSigner(shared, "auth")
	s.now = func() time.Time { return now }
	first, _ := s.Token("users")
	if again, _ := s.Token("users"); again != first {
		t.Fatal("a fresh token was not reused")
	}
	if forOther, _ := s.Token("volunteers"); forOther == first {
		t.Fatal("one token for two audiences")
	}
	now = now.Add(Lifetime/2 + time.Second)
	if renewed, _ := s.Token("users"); renewed == first {
		t.Fatal("a token past half its lifetime was reused")
	}
}

func TestMiddleware(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.Use(NewVerifier(shared, "users").Middleware())
	e.POST("/internal/users/summaries", func(c *gin.Context) { c.String(http.StatusOK, "summaries") })
	e.GET("/.well-known/jwks.json", func(c *gin.Context) { c.String(http.StatusOK, "keys") })
	e.NoRoute(func(c *gin.Context) { c.String(http.StatusNotFound, "no route") })
	call := func(method, path, auth string) (int, string, http.Header) {
		req := httptest.NewRequest(method, path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		return w.Code, w.Body.String(), w.Header()
	}
	good, _ := NewSigner(shared, "auth").Token("users")
	wrongAudience, _ := NewSigner(shared, "auth").Token("volunteers")
	expired, _ := NewSigner(shared, "auth").sign("users", time.Now().Add(-time.Hour), Lifetime)

	t.Run("a valid token reaches the handler", func(t *testing.T) {
		if code, body, _ := call("POST", "/internal/users/summaries", "Bearer "+good); code != http.StatusOK || body != "summaries" {
			t.Fatalf("%d %s", code, body)
		}
	})
	for name, c := range map[string]struct {
		auth, message string
		code          float64
	}{
		"no credentials":              {"", "Invalid token.", 2000},
		"another scheme":              {"Basic " + good, "Invalid token.", 2000},
		"a token for another service": {"Bearer " + wrongAudience, "Invalid token.", 2000},
		"an expired token":            {"Bearer " + expired, "Token expired.", 2001},
	} {
		t.Run(name+" is 401 in the API's shape", func(t *testing.T) {
			code, body, hdr := call("POST", "/internal/users/summaries", c.auth)
			var shape struct {
				Errors map[string]map[string]any `json:"errors"`
			}
			if err := json.Unmarshal([]byte(body), &shape); err != nil {
				t.Fatalf("%d %s: %v", code, body, err)
			}
			a := shape.Errors["authentication"]
			if code != http.StatusUnauthorized || a["message"] != c.message || a["code"] != c.code || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("%d %s %v", code, body, hdr)
			}
		})
	}
	t.Run("an unknown path without credentials is 401, not 404", func(t *testing.T) {
		if code, _, _ := call("GET", "/internal/nothing", ""); code != http.StatusUnauthorized {
			t.Fatalf("%d", code)
		}
	})
	t.Run("published keys need no token", func(t *testing.T) {
		if code, body, _ := call("GET", "/.well-known/jwks.json", ""); code != http.StatusOK || body != "keys" {
			t.Fatalf("%d %s", code, body)
		}
	})
}
