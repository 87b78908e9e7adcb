package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// fakeResolver answers every name with addrs.
type fakeResolver []netip.Addr

func (f fakeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if len(f) == 0 {
		return nil, errors.New("no such host")
	}
	return f, nil
}

var public = netip.MustParseAddr("93.184.216.34")

func TestPublic(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "100.127.255.255", "0.0.0.0", "0.1.2.3", "224.0.0.1", "255.255.255.255", "240.0.0.1",
		"::1", "::", "fc00::1", "fd12::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1",
		// site-local, and IPv4 embedded: IPv4-compatible, 6to4 and Teredo forms of 10.0.0.1 and 127.0.0.1
		"fec0::1", "::a00:1", "::7f00:1", "2002:a00:1::1", "2002:7f00:1::", "2001:0:a00:1::1"} {
		if webhook.Public(netip.MustParseAddr(a)) {
			t.Errorf("%s is taken for public", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "8.8.8.8", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"} {
		if !webhook.Public(netip.MustParseAddr(a)) {
			t.Errorf("%s is refused", a)
		}
	}
}

func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	pub := webhook.NewPolicy(loopback).WithResolver(fakeResolver{public})
	internal := webhook.NewPolicy(loopback).WithResolver(fakeResolver{netip.MustParseAddr("10.0.0.7")})
	allowedName := webhook.NewPolicy(loopback).WithResolver(fakeResolver{netip.MustParseAddr("127.0.0.1")})
	nowhere := webhook.NewPolicy(loopback).WithResolver(fakeResolver{})
	publicAllowed := webhook.NewPolicy([]netip.Prefix{netip.MustParsePrefix("93.184.216.0/24")}).WithResolver(fakeResolver{public})
	cases := []struct {
		name    string
		policy  *webhook.Policy
		url     string
		problem string // "" when accepted; else a part of the message
		private bool   // an operator allowed the app private targets
	}{
		{"https to a public host", pub, "https://hooks.example.org/in?x=1", "", false},
		{"an IP literal in the allowed networks over http", pub, "http://127.0.0.1:8080/in", "", true},
		{"a name resolving into the allowed networks over http", allowedName, "http://receiver.internal/in", "", true},
		{"https to the allowed networks", allowedName, "https://receiver.internal/in", "", true},
		{"the allowed networks, for an app not allowed them", pub, "http://127.0.0.1:8080/in", "not a public address", false},
		{"the allowed networks over https, for an app not allowed them", allowedName, "https://receiver.internal/in", "not a public address", false},
		{"http to a public host", pub, "http://hooks.example.org/in", "https", false},
		{"http to a public host, for an app allowed private targets", pub, "http://hooks.example.org/in", "https", true},
		{"http to a public address the operator listed", publicAllowed, "http://hooks.example.org/in", "https", true},
		{"empty", pub, "", "required", false},
		{"relative", pub, "/hooks", "absolute", false},
		{"another scheme", pub, "ftp://hooks.example.org/in", "https", false},
		{"user info", pub, "https://user:secret@hooks.example.org/in", "user name", false},
		{"a fragment", pub, "https://hooks.example.org/in#x", "fragment", false},
		{"too long", pub, "https://hooks.example.org/" + strings.Repeat("a", 2048), "2048", false},
		{"a bad port", pub, "https://hooks.example.org:99999/in", "port", false},
		{"loopback not allowed", webhook.NewPolicy(nil), "https://127.0.0.1/in", "not a public address", true},
		{"a name resolving to a private address", internal, "https://hooks.example.org/in", "10.0.0.7", true},
		{"the metadata address", pub, "https://169.254.169.254/latest", "not a public address", false},
		{"a name that does not resolve", nowhere, "https://nowhere.example/in", "does not resolve", false},
		{"not a URL", pub, "https://exa mple.org/", "absolute", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.policy.CheckURL(ctx, tc.url, tc.private)
			if (tc.problem == "") != (got == "") || !strings.Contains(got, tc.problem) {
				t.Fatalf("CheckURL(%q) = %q, want a problem containing %q", tc.url, got, tc.problem)
			}
		})
	}
}

func TestTargetPolicyAtDialTime(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	refusing := fast()
	refusing.Policy = webhook.NewPolicy(nil) // no allowed networks: loopback is refused
	reg := prometheus.NewRegistry()
	refusing.Metrics = webhook.NewMetrics(reg)

	t.Run("loopback is refused at dial without the allowlist", func(t *testing.T) {
		rc := authtest.NewReceiver(t, nil)
		sub := e.subscribe(tracker, rc.URL, authapi.EventUserUpdated) // allowed when subscribed
		stop := e.run(refusing)
		defer stop()
		e.publish(authtest.Event(authapi.EventUserUpdated, "user:1", `{}`))
		e.eventually(5*time.Second, "a refused attempt", func() bool { return e.deliveries(sub.ID)[0].Attempts > 0 })
		d := e.deliveries(sub.ID)[0]
		if !strings.HasPrefix(d.LastError, "refused: 127.0.0.1 is not a public address") || d.LastStatus != 0 || d.State != webhook.DeliveryPending || rc.Count() != 0 {
			t.Fatalf("%+v, %d receipts", d, rc.Count())
		}
		if metricValue(t, reg, "eventreg_webhook_deliveries_total", "user-updated", webhook.OutcomeRefused) < 1 {
			t.Fatal("the refusal is not counted")
		}
		if err := e.hooks.Delete(ctx, tracker, sub.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a name that resolved to a public address when subscribed is refused when it dials loopback", func(t *testing.T) {
		rc := authtest.NewReceiver(t, nil)
		_, port, _ := net.SplitHostPort(rc.Listener.Addr().String())
		// When subscribing, "localhost" resolves to a public address (the
		// first answer of a rebinding name); at dial time it is loopback.
		rebinding := webhook.NewService(e.store, clientdb.New(e.pool), webhook.NewPolicy(nil).WithResolver(fakeResolver{public}), nil)
		sub, err := rebinding.Create(ctx, tracker, webhook.NewSubscription{URL: "https://localhost:" + port + "/in", Events: []string{authapi.EventUserUpdated}})
		if err != nil {
			t.Fatal(err)
		}
		stop := e.run(refusing)
		defer stop()
		e.publish(authtest.Event(authapi.EventUserUpdated, "user:2", `{}`))
		e.eventually(5*time.Second, "a refused attempt", func() bool { return e.deliveries(sub.ID)[0].Attempts > 0 })
		if d := e.deliveries(sub.ID)[0]; !strings.HasPrefix(d.LastError, "refused: ") || rc.Count() != 0 {
			t.Fatalf("%+v, %d receipts", d, rc.Count())
		}
		if err := e.hooks.Delete(ctx, tracker, sub.ID); err != nil {
			t.Fatal(err)
		}
	})
	e.run(fast())
	t.Run("a redirect is not followed", func(t *testing.T) {
		elsewhere := authtest.NewReceiver(t, nil)
		rc := authtest.NewReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) {
			http.Redirect(w, r, elsewhere.URL, http.StatusTemporaryRedirect)
		})
		sub := e.subscribe(tracker, rc.URL, authapi.EventVolunteerDeleted)
		e.publish(authtest.Event(authapi.EventVolunteerDeleted, "volunteer:1", `{}`))
		e.eventually(5*time.Second, "an attempt", func() bool { return e.deliveries(sub.ID)[0].Attempts > 0 })
		d := e.deliveries(sub.ID)[0]
		if d.LastStatus != 307 || !strings.HasPrefix(d.LastError, "HTTP 307 (redirects are not followed)") || elsewhere.Count() != 0 {
			t.Fatalf("%+v, %d receipts elsewhere", d, elsewhere.Count())
		}
	})
	t.Run("a big answer is read no further than 4 KiB", func(t *testing.T) {
		endless := func(status int) func(http.ResponseWriter, *http.Request, int) {
			return func(w http.ResponseWriter, r *http.Request, _ int) {
				w.WriteHeader(status)
				chunk := []byte(strings.Repeat("x", 64<<10))
				for i := 0; i < 1024 && r.Context().Err() == nil; i++ { // up to 64 MiB
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}
		}
		ok := authtest.NewReceiver(t, endless(http.StatusOK))
		failing := authtest.NewReceiver(t, endless(http.StatusInternalServerError))
		okSub := e.subscribe(tracker, ok.URL, authapi.EventVolunteerSubmitted)
		failSub := e.subscribe(tracker, failing.URL, authapi.EventVolunteerSubmitted)
		start := time.Now()
		e.publish(authtest.Event(authapi.EventVolunteerSubmitted, "volunteer:2", `{}`))
		e.eventually(5*time.Second, "delivered", func() bool { return e.deliveries(okSub.ID)[0].State == webhook.DeliveryDelivered })
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("took %s: the answer was read whole", took)
		}
		e.eventually(5*time.Second, "a failed attempt", func() bool { return e.deliveries(failSub.ID)[0].Attempts > 0 })
		// a private target: the status only (TestPrivateTargets)
		if d := e.deliveries(failSub.ID)[0]; d.LastStatus != 500 || d.LastError != "HTTP 500" {
			t.Fatalf("last error of %d bytes: %.80q", len(d.LastError), d.LastError)
		}
	})
}

// TestPrivateTargets: targets inside WEBHOOK_ALLOWED_NETWORKS are for the
// apps an operator allowed them (the fixture allows the tracker), nothing
// of their answers reaches the app, and plain http never goes to a public
// address.
func TestPrivateTargets(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	stranger, _, err := e.apps.Create(ctx, client.NewClient{Name: "Stranger", Kind: client.KindService, Scopes: []string{"user:read", "webhook:manage"}})
	if err != nil {
		t.Fatal(err)
	}
	e.run(fast())

	t.Run("an app not allowed private targets cannot subscribe to one", func(t *testing.T) {
		rc := authtest.NewReceiver(t, nil)
		for _, url := range []string{rc.URL + "/in", strings.Replace(rc.URL, "http:", "https:", 1) + "/in"} {
			_, err := e.hooks.Create(ctx, stranger.ID, webhook.NewSubscription{URL: url, Events: []string{authapi.EventUserUpdated}})
			var invalid *webhook.InvalidError
			if !errors.As(err, &invalid) || !strings.Contains(invalid.Fields["url"], "not a public address") {
				t.Fatalf("%s: %v", url, err)
			}
		}
	})
	t.Run("a private target's answer never appears in lastError", func(t *testing.T) {
		rc := authtest.NewReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			http.Error(w, "SSH-2.0-OpenSSH_9.6 internal-only banner", http.StatusInternalServerError)
		})
		sub := e.subscribe(tracker, rc.URL, authapi.EventVolunteerDeleted)
		e.publish(authtest.Event(authapi.EventVolunteerDeleted, "volunteer:p1", `{}`))
		e.eventually(5*time.Second, "a failed attempt", func() bool { return e.deliveries(sub.ID)[0].Attempts > 0 })
		if d := e.deliveries(sub.ID)[0]; d.LastStatus != 500 || d.LastError != "HTTP 500" {
			t.Fatalf("lastError %q (status %d)", d.LastError, d.LastStatus)
		}
	})
	t.Run("an http target that now resolves to a public address is refused at dial", func(t *testing.T) {
		rc := authtest.NewReceiver(t, nil)
		sub := e.subscribe(tracker, rc.URL+"/in", authapi.EventVolunteerSubmitted) // http: accepted inside the allowed networks
		// Its name now resolves to a public address (DNS rebinding): what the
		// dialer sees is the same as for this literal.
		if _, err := e.pool.Exec(ctx, `UPDATE webhook_subscriptions SET url = 'http://93.184.216.34:9/in' WHERE id = $1`, sub.ID); err != nil {
			t.Fatal(err)
		}
		e.publish(authtest.Event(authapi.EventVolunteerSubmitted, "volunteer:p2", `{}`))
		e.eventually(10*time.Second, "an attempt", func() bool { return e.deliveries(sub.ID)[0].Attempts > 0 })
		if d := e.deliveries(sub.ID)[0]; !strings.HasPrefix(d.LastError, "refused: 93.184.216.34 is a public address") {
			t.Fatalf("lastError %q", d.LastError)
		}
	})
	t.Run("once an operator allows it, the app subscribes to one", func(t *testing.T) {
		rc := authtest.NewReceiver(t, nil)
		if err := e.hooks.AllowPrivate(ctx, stranger.ID, true); err != nil {
			t.Fatal(err)
		}
		sub := e.subscribe(stranger.ID, rc.URL+"/in", authapi.EventUserUpdated)
		e.publish(authtest.Event(authapi.EventUserUpdated, "user:p3", `{}`))
		e.eventually(5*time.Second, "delivered", func() bool { return e.deliveries(sub.ID)[0].State == webhook.DeliveryDelivered })

		t.Run("and when the operator withdraws it, its private targets are refused at the next connection", func(t *testing.T) {
			if err := e.hooks.AllowPrivate(ctx, stranger.ID, false); err != nil {
				t.Fatal(err)
			}
			before := rc.Count()
			e.publish(authtest.Event(authapi.EventUserUpdated, "user:p4", `{}`))
			e.eventually(5*time.Second, "a refused attempt", func() bool {
				ds := e.deliveries(sub.ID)
				return len(ds) == 2 && ds[1].Attempts > 0
			})
			if d := e.deliveries(sub.ID)[1]; !strings.HasPrefix(d.LastError, "refused: ") || rc.Count() != before {
				t.Fatalf("%+v, %d receipts", d, rc.Count()-before)
			}
		})
	})
	t.Run("allowing an unknown app is refused", func(t *testing.T) {
		if err := e.hooks.AllowPrivate(ctx, 999999, true); !errors.Is(err, webhook.ErrAppNotFound) {
			t.Fatalf("%v", err)
		}
	})
}
