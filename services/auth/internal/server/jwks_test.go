package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apispec"

	"github.com/eventreg/eventreg/services/auth/internal/signing"
)

// keyStore holds one key and fails while down is set.
type keyStore struct {
	key, rsa signing.Key
	down     atomic.Bool
}

func (s *keyStore) List(context.Context) ([]signing.Key, error) {
	if s.down.Load() {
		return nil, errors.New("database down")
	}
	return []signing.Key{s.key, s.rsa}, nil
}

func (s *keyStore) Locked(context.Context, func([]signing.Key) ([]signing.Key, error)) error {
	return errors.New("not used")
}

func TestJWKSIsUnavailableUntilKeysAreLoaded(t *testing.T) {
	kek := bytes.Repeat([]byte{7}, 32)
	key, err := signing.NewKey(kek, time.Now(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := signing.NewKeyFor(signing.AlgRS256, kek, time.Now(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	store := &keyStore{key: key, rsa: rsaKey}
	store.down.Store(true)
	keys := signing.NewManager(store, kek, signing.Config{MaxTokenTTL: time.Hour}, nil)
	if err := keys.Reload(context.Background()); err == nil {
		t.Fatal("loaded keys from a store that is down")
	}
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.GET("/.well-known/jwks.json", jwks(keys))
	spec, err := apispec.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	get := func(t *testing.T) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "/.well-known/jwks.json", nil)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if err := spec.ValidateResponse(req, w.Code, w.Header(), w.Body.Bytes()); err != nil {
			t.Errorf("not as the OpenAPI document says: %v", err)
		}
		return w
	}

	t.Run("before the keys are loaded: 503 with Retry-After and a JSON error", func(t *testing.T) {
		w := get(t)
		var body map[string]map[string]map[string]any
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || json.Unmarshal(w.Body.Bytes(), &body) != nil ||
			body["errors"]["server"]["message"] == nil {
			t.Fatalf("%d %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
		}
		if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("Cache-Control %q", cc)
		}
	})
	t.Run("once loaded: 200 with the keys of both algorithms", func(t *testing.T) {
		store.down.Store(false)
		if err := keys.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		w := get(t)
		var set struct{ Keys []struct{ Kid string } }
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &set) != nil || len(set.Keys) != 2 || set.Keys[0].Kid != key.KID || set.Keys[1].Kid != rsaKey.KID {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
}
