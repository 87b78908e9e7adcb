package svcclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/svcclient"
)

func TestOutcomes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte(`{"n":3}`))
		case "/missing":
			w.WriteHeader(404)
		case "/broken":
			w.WriteHeader(502)
		case "/slow":
			time.Sleep(500 * time.Millisecond)
		}
	}))
	defer srv.Close()
	c := svcclient.New("users", srv.URL, 200*time.Millisecond, nil)
	ctx := context.Background()

	var out struct{ N int }
	if err := c.Do(ctx, "GET", "/ok", nil, &out); err != nil || out.N != 3 {
		t.Fatalf("ok: %v %+v", err, out)
	}
	if err := c.Do(ctx, "GET", "/missing", nil, nil); !svcclient.IsStatus(err, 404) {
		t.Fatalf("missing: %v", err)
	}
	for _, path := range []string{"/broken", "/slow"} {
		err := c.Do(ctx, "GET", path, nil, nil)
		if !errors.Is(err, svcclient.ErrUnavailable) {
			t.Fatalf("%s: want ErrUnavailable, got %v", path, err)
		}
		var ue *svcclient.UnavailableError
		if !errors.As(err, &ue) || ue.Dependency() != "The users service" {
			t.Fatalf("%s: the error does not name the service: %#v", path, err)
		}
	}
	closed := svcclient.New("users", "http://127.0.0.1:1", time.Second, nil)
	if err := closed.Do(ctx, "GET", "/", nil, nil); !errors.Is(err, svcclient.ErrUnavailable) {
		t.Fatalf("refused: %v", err)
	}
}

// audienceToken is Credentials whose token names the audience.
type audienceToken struct{}

func (audienceToken) Token(audience string) (string, error) { return "token-for-" + audience, nil }

func TestCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer token-for-users":
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/wrong-password": // the endpoint's own 401: no challenge
			w.WriteHeader(http.StatusUnauthorized)
		default:
			w.Write([]byte(`{}`))
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	t.Run("each call carries a token for the called service", func(t *testing.T) {
		if err := svcclient.New("users", srv.URL, time.Second, audienceToken{}).Do(ctx, "GET", "/ok", nil, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("an endpoint's own 401 is the caller's to read", func(t *testing.T) {
		err := svcclient.New("users", srv.URL, time.Second, audienceToken{}).Do(ctx, "POST", "/wrong-password", nil, nil)
		if !svcclient.IsStatus(err, http.StatusUnauthorized) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a refused token is the service being unavailable, never a wrong password", func(t *testing.T) {
		err := svcclient.New("users", srv.URL, time.Second, nil).Do(ctx, "POST", "/wrong-password", nil, nil)
		if !errors.Is(err, svcclient.ErrUnavailable) || svcclient.IsStatus(err, http.StatusUnauthorized) {
			t.Fatalf("got %v", err)
		}
	})
}
