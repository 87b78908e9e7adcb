package webhook_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/tokenauth"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// receiverClaims are what a receiver reads from the token.
type receiverClaims struct {
	josejwt.Claims
	Event      string `json:"event"`
	EventID    string `json:"event_id"`
	BodySHA256 string `json:"body_sha256"`
}

// verifyWithGoJose checks a delivery as an independent receiver would:
// go-jose, the published JWKS, the claims and the body's hash.
func verifyWithGoJose(jwks []byte, raw string, body []byte, audience string) (receiverClaims, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(jwks, &set); err != nil {
		return receiverClaims{}, err
	}
	tok, err := josejwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return receiverClaims{}, err
	}
	if typ := tok.Headers[0].ExtraHeaders[jose.HeaderType]; typ != "webhook+jwt" {
		return receiverClaims{}, errors.New("typ is not webhook+jwt")
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) != 1 {
		return receiverClaims{}, errors.New("kid not in the JWKS")
	}
	var c receiverClaims
	if err := tok.Claims(keys[0].Key, &c); err != nil {
		return receiverClaims{}, err
	}
	if err := c.Validate(josejwt.Expected{Issuer: issuer, AnyAudience: josejwt.Audience{audience}, Time: time.Now()}); err != nil {
		return receiverClaims{}, err
	}
	sum := sha256.Sum256(body)
	if c.BodySHA256 != base64.RawURLEncoding.EncodeToString(sum[:]) {
		return receiverClaims{}, errors.New("body_sha256 does not match the body")
	}
	return c, nil
}

func TestDeliveryRequest(t *testing.T) {
	e := newEnv(t)
	rc := authtest.NewReceiver(t, nil)
	sub := e.subscribe(tracker, rc.URL+"/hooks?tenant=7", authapi.EventVolunteerUpdated)
	recorder := tracetest.NewSpanRecorder()
	cfg := fast()
	cfg.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder)).Tracer("test")
	reg := prometheus.NewRegistry()
	cfg.Metrics = webhook.NewMetrics(reg)
	e.run(cfg)

	origin := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ev := authtest.Event(authapi.EventVolunteerUpdated, "volunteer:2026:1001", `{ "user": {"id": "1001"}, "note": "é" }`)
	ev.TraceParent = origin
	if n := e.publish(ev); n != 1 {
		t.Fatalf("accepted %d", n)
	}
	e.eventually(5*time.Second, "the delivery", func() bool { return rc.Count() == 1 })
	got := rc.Receipts()[0]
	ds := e.deliveries(sub.ID)

	t.Run("the body is exactly {event, data}, data compacted", func(t *testing.T) {
		want := `{"event":"volunteer-updated","data":{"user":{"id":"1001"},"note":"é"}}`
		if string(got.Body) != want {
			t.Fatalf("body %s, want %s", got.Body, want)
		}
	})
	t.Run("headers", func(t *testing.T) {
		h := got.Header
		if h.Get("Content-Type") != "application/json" || h.Get("User-Agent") != "eventreg-webhooks" ||
			h.Get("Webhook-Id") != ds[0].ID || h.Get("Webhook-Event") != "volunteer-updated" ||
			!strings.HasPrefix(h.Get("Authorization"), "Bearer ") {
			t.Fatalf("headers %v", h)
		}
	})
	raw := strings.TrimPrefix(got.Header.Get("Authorization"), "Bearer ")
	t.Run("the token verifies against the JWKS with go-jose", func(t *testing.T) {
		c, err := verifyWithGoJose(e.keys.JWKS(), raw, got.Body, "501")
		if err != nil {
			t.Fatal(err)
		}
		if c.ID != ds[0].ID || c.Event != "volunteer-updated" || c.EventID != ev.ID || c.Expiry.Time().Sub(c.IssuedAt.Time()) != 5*time.Minute {
			t.Fatalf("claims %+v", c)
		}
	})
	t.Run("the token does not verify for another body", func(t *testing.T) {
		if _, err := verifyWithGoJose(e.keys.JWKS(), raw, append(got.Body[:len(got.Body)-1:len(got.Body)-1], ' ', '}'), "501"); err == nil {
			t.Fatal("a changed body verified")
		}
	})
	t.Run("the token is refused as an access token by tokenauth", func(t *testing.T) {
		jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(e.keys.JWKS())
		}))
		defer jwks.Close()
		// Even with its own issuer and audience, typ webhook+jwt is not an access token.
		v, err := tokenauth.New(tokenauth.Config{JWKSURL: jwks.URL, Issuer: issuer, Audience: "501"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Validate(context.Background(), raw); !errors.Is(err, tokenauth.ErrInvalid) {
			t.Fatalf("tokenauth answered %v", err)
		}
		if _, err := e.keys.Verify(raw); err == nil {
			t.Fatal("the signing manager verified a webhook token as an access token")
		}
	})
	t.Run("the delivery span links to the event's trace and goes out as traceparent", func(t *testing.T) {
		// The span ends once the outcome is recorded, after the receiver
		// answered: wait for it.
		var span sdktrace.ReadOnlySpan
		e.eventually(5*time.Second, "the span webhook deliver ended", func() bool {
			for _, s := range recorder.Ended() {
				if s.Name() == "webhook deliver" {
					span = s
				}
			}
			return span != nil
		})
		links := span.Links()
		if len(links) != 1 || links[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
			t.Fatalf("links %+v", links)
		}
		sent := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(got.Header)))
		if sent.TraceID() != span.SpanContext().TraceID() || sent.SpanID() != span.SpanContext().SpanID() {
			t.Fatalf("traceparent %q is not the delivery span's", got.Header.Get("traceparent"))
		}
	})
	t.Run("recorded as delivered, and counted", func(t *testing.T) {
		e.eventually(2*time.Second, "delivered", func() bool { return e.deliveries(sub.ID)[0].State == webhook.DeliveryDelivered })
		d := e.deliveries(sub.ID)[0]
		if d.Attempts != 1 || d.LastStatus != 204 || d.DeliveredAt.IsZero() || !d.NextAttemptAt.IsZero() {
			t.Fatalf("%+v", d)
		}
		if n := metricValue(t, reg, "eventreg_webhook_deliveries_total", "volunteer-updated", webhook.OutcomeDelivered); n != 1 {
			t.Fatalf("delivered counter %v", n)
		}
		if n := testutil.CollectAndCount(reg, "eventreg_webhook_delivery_latency_seconds"); n == 0 {
			t.Fatal("no latency histogram")
		}
	})
}

// metricValue returns the value of the counter name whose label values are
// labels (in order), 0 when absent.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for i, l := range m.GetLabel() {
				if i >= len(labels) || l.GetValue() != labels[i] {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
