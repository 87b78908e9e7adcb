package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
)

// TestWebhooks drives webhooks end to end: apps subscribe through the
// gateway with their own tokens; changes made through the API, the admin
// CLIs and import travel through the producing services' outboxes to auth,
// which signs and delivers them to a real receiver that verifies every
// request with an independent JOSE library. The receiver goes down and comes
// back, and the delivering process is killed mid-delivery.
func TestWebhooks(t *testing.T) {
	s := startWithWebhooks(t, map[string]string{"WEBHOOK_TIMEOUT": "2s", "WEBHOOK_LEASE": "4s"})
	recv := startWebhookReceiver(t, s.GatewayURL, s.Issuer)
	waitForEmptyOutboxes(t, s) // the demo import's events reach auth before any app subscribes

	// A second app that may read users and volunteers but not registrations.
	boardID, boardSecret := createClient(t, s, "Shift Board", "Plans volunteer shifts", "service", "user:read volunteer:read webhook:manage")
	trackerTok := serviceToken(t, s, trackerID, trackerSecret, "webhook:manage", "user:roles:update", "user:read", "volunteer:read", "registration:read")
	boardTok := serviceToken(t, s, boardID, boardSecret, "webhook:manage", "user:read", "volunteer:read")
	tokens := map[string]string{trackerID: trackerTok, boardID: boardTok}

	nonRegistration := []string{"volunteer-submitted", "volunteer-updated", "volunteer-assigned", "volunteer-unassigned", "volunteer-deleted", "user-updated"}
	var trackerSub, boardSub string

	t.Run("subscriptions follow the app's scopes and refuse unsafe targets", func(t *testing.T) {
		r := subscribe(t, s, trackerTok, recv.URL(trackerID), append(nonRegistration, "registration-updated"))
		if r.status != http.StatusCreated {
			t.Fatalf("tracker: %d %s", r.status, r.body)
		}
		trackerSub = jsonField(t, r.body, "id")
		for _, target := range []string{"http://10.1.2.3/hook", "http://169.254.169.254/latest/meta-data", "http://[::1]:9/x", "ftp://example.org/x"} {
			if r := subscribe(t, s, boardTok, target, nonRegistration); r.status != http.StatusBadRequest {
				t.Errorf("target %s: %d %s", target, r.status, r.body)
			}
		}
		// The receiver is on 127.0.0.1, inside WEBHOOK_ALLOWED_NETWORKS, but
		// an app reaches it only once an operator allowed it private targets
		// (the tracker is, by the demo fixture).
		if r := subscribe(t, s, boardTok, recv.URL(boardID), nonRegistration); r.status != http.StatusBadRequest || !strings.Contains(r.body, `"url"`) {
			t.Errorf("an app not allowed private targets subscribing to one: %d %s", r.status, r.body)
		}
		s.Command(t, "auth", "webhooks", "allow-private", "--client", boardID)
		if r := subscribe(t, s, boardTok, recv.URL(boardID), append(nonRegistration, "registration-updated")); r.status != http.StatusForbidden ||
			!strings.Contains(r.body, "registration:read") {
			t.Errorf("an app without registration:read subscribing to registration events: %d %s", r.status, r.body)
		}
		r = subscribe(t, s, boardTok, recv.URL(boardID), nonRegistration)
		if r.status != http.StatusCreated {
			t.Fatalf("board: %d %s", r.status, r.body)
		}
		boardSub = jsonField(t, r.body, "id")
		if r := mustSend(t, s, http.MethodGet, "/api/v0/webhooks/"+boardSub, trackerTok, ""); r.status != http.StatusNotFound {
			t.Errorf("another app's subscription: %d %s", r.status, r.body)
		}
		if r := mustSend(t, s, http.MethodGet, "/api/v0/webhooks", boardTok, ""); r.status != http.StatusOK ||
			strings.Count(r.body, `"url"`) != 1 || !strings.Contains(r.body, boardSub) {
			t.Errorf("the board's list: %d %s", r.status, r.body)
		}
		if r := mustSend(t, s, http.MethodGet, "/api/v0/webhooks", serviceToken(t, s, trackerID, trackerSecret, "user:read"), ""); r.status != http.StatusForbidden {
			t.Errorf("a token without webhook:manage: %d %s", r.status, r.body)
		}
	})
	if trackerSub == "" || boardSub == "" {
		t.FailNow()
	}

	t.Run("an operator's disable sticks until an operator lifts it", func(t *testing.T) {
		s.Command(t, "auth", "webhooks", "disable", boardSub)
		r := mustSend(t, s, http.MethodPatch, "/api/v0/webhooks/"+boardSub, boardTok, `{"state":"active"}`)
		if r.status != http.StatusForbidden || !strings.Contains(r.body, `"access"`) {
			t.Errorf("the app enabling what an operator disabled: %d %s", r.status, r.body)
		}
		if r := mustSend(t, s, http.MethodGet, "/api/v0/webhooks/"+boardSub, boardTok, ""); !strings.Contains(r.body, `"state":"disabled"`) ||
			!strings.Contains(r.body, `"disabledBy":"operator"`) {
			t.Errorf("after the app's PATCH: %d %s", r.status, r.body)
		}
		s.Command(t, "auth", "webhooks", "enable", boardSub)
		if r := mustSend(t, s, http.MethodGet, "/api/v0/webhooks/"+boardSub, boardTok, ""); !strings.Contains(r.body, `"state":"active"`) {
			t.Fatalf("after the operator enabled it: %d %s", r.status, r.body)
		}
	})

	t.Run("each change reaches each subscribed app once, rendered as the read API renders it", func(t *testing.T) {
		// Through the API and the admin CLI: role memberships.
		if r := mustSend(t, s, http.MethodPut, "/api/v0/users/1002/roles/5", trackerTok, `{"scope":"convention"}`); r.status/100 != 2 {
			t.Fatalf("PUT role: %d %s", r.status, r.body)
		}
		s.Command(t, "users", "roles", "grant", "1001", "4", "--scope", "global")
		// Through import: a user, then a new volunteer (1001), an assignment
		// gained (1002) and lost (1005), other changes (1003), a registration.
		// (The volunteer events carry the user summaries as the relay reads
		// them, so the user changes first, as the read API shows it now.)
		importFixture(t, s, "users", map[string]any{"users": []any{userRecord(t, 1005, "Erin H.")}})
		importFixture(t, s, "volunteers", map[string]any{"volunteers": []any{
			volunteerRecord(1001, [][2]any{{10, []string{"interest"}}}, 4),
			volunteerRecord(1002, [][2]any{{11, []string{"interest", "request", "assignment"}}, {12, []string{"avoid"}}}, 0),
			volunteerRecord(1005, [][2]any{{11, []string{"experience"}}}, 0),
			volunteerRecord(1003, [][2]any{{10, []string{"experience", "assignment"}}, {11, []string{"interest"}}}, 16),
		}})
		importFixture(t, s, "registrations", map[string]any{"registrations": []any{registrationRecord(1002, "Bobby Tables")}})

		want := map[string][]string{
			trackerID: {"registration-updated 1002", "user-updated 1001", "user-updated 1002", "user-updated 1005",
				"volunteer-assigned 1002", "volunteer-submitted 1001", "volunteer-unassigned 1005", "volunteer-updated 1003"},
			boardID: {"user-updated 1001", "user-updated 1002", "user-updated 1005",
				"volunteer-assigned 1002", "volunteer-submitted 1001", "volunteer-unassigned 1005", "volunteer-updated 1003"},
		}
		got := waitForDeliveries(t, recv, want, 0)
		for app, ds := range got {
			for _, d := range ds {
				path := readPathOf(t, d)
				r := mustSend(t, s, http.MethodGet, path, tokens[app], "")
				if diff := testkit.JSONDiff([]byte(r.body), d.Data); r.status != http.StatusOK || diff != "" {
					t.Errorf("app %s, %s: the event's data is not GET %s (%d) (-read +event):\n%s", app, d.Event, path, r.status, diff)
				}
			}
		}

		// Deleting through the admin CLI sends the record as it was.
		submitted := got[trackerID][slices.IndexFunc(got[trackerID], func(d webhookDelivery) bool { return d.Event == "volunteer-submitted" })]
		s.Command(t, "volunteers", "delete", "1001")
		mark := len(recv.deliveries())
		deleted := waitForDeliveries(t, recv, map[string][]string{trackerID: {"volunteer-deleted 1001"}, boardID: {"volunteer-deleted 1001"}}, mark)
		if diff := testkit.JSONDiff(submitted.Data, deleted[trackerID][0].Data); diff != "" {
			t.Errorf("volunteer-deleted does not carry the record as submitted (-submitted +deleted):\n%s", diff)
		}
	})

	t.Run("a receiver that is down gets every event in order per resource once it is back", func(t *testing.T) {
		recv.down(true)
		mark := len(recv.deliveries())
		for _, hours := range []int{20, 21, 22} {
			importFixture(t, s, "volunteers", map[string]any{"volunteers": []any{
				volunteerRecord(1003, [][2]any{{10, []string{"experience", "assignment"}}, {11, []string{"interest"}}}, hours)}})
			importFixture(t, s, "registrations", map[string]any{"registrations": []any{registrationRecord(1002, fmt.Sprintf("Bobby %d", hours))}})
		}
		// The tracker's deliveries are failing and being retried; the
		// receiver is a private target, so nothing of its answer is shown.
		eventually(t, 30*time.Second, "failed attempts recorded", func() error {
			r := mustSend(t, s, http.MethodGet, "/api/v0/webhooks/"+trackerSub+"/deliveries?state=pending", trackerTok, "")
			if r.status != http.StatusOK || !strings.Contains(r.body, `"lastStatus":503`) {
				return fmt.Errorf("%d %.300s", r.status, r.body)
			}
			if strings.Contains(r.body, "receiver-internal") || !strings.Contains(r.body, `"lastError":"HTTP 503"`) {
				t.Fatalf("a private target's answer shown to the app: %.500s", r.body)
			}
			return nil
		})
		time.Sleep(time.Second) // a few more retries while down
		recv.down(false)
		got := waitForDeliveries(t, recv, map[string][]string{
			trackerID: {"registration-updated 1002", "registration-updated 1002", "registration-updated 1002",
				"volunteer-updated 1003", "volunteer-updated 1003", "volunteer-updated 1003"},
			boardID: {"volunteer-updated 1003", "volunteer-updated 1003", "volunteer-updated 1003"},
		}, mark)
		for app, ds := range got {
			var hours, badges []string
			for _, d := range ds {
				switch d.Event {
				case "volunteer-updated":
					hours = append(hours, optionValue(t, d.Data, "Hours available"))
				case "registration-updated":
					var reg struct{ BadgeName string }
					_ = json.Unmarshal(d.Data, &reg)
					badges = append(badges, reg.BadgeName)
				}
			}
			if strings.Join(hours, ",") != "20,21,22" {
				t.Errorf("app %s got the volunteer's changes in the order %v", app, hours)
			}
			if app == trackerID && strings.Join(badges, ",") != "Bobby 20,Bobby 21,Bobby 22" {
				t.Errorf("app %s got the registration's changes in the order %v", app, badges)
			}
		}
	})

	t.Run("killing the delivering and the producing process loses nothing", func(t *testing.T) {
		// auth is killed while a delivery is in flight at the receiver.
		recv.holdRequests()
		mark := len(recv.deliveries())
		importFixture(t, s, "volunteers", map[string]any{"volunteers": []any{
			volunteerRecord(1003, [][2]any{{10, []string{"experience", "assignment"}}, {11, []string{"interest"}}}, 30)}})
		var interrupted string
		select {
		case interrupted = <-recv.held:
		case <-time.After(30 * time.Second):
			t.Fatal("no delivery reached the receiver")
		}
		auth := s.Services["auth"]
		auth.Kill()
		auth.Wait()
		recv.release() // its answer reaches no one
		auth.Restart(t)
		// The lease of the interrupted delivery expires and it is sent again
		// (same jti): at least once, never lost.
		eventually(t, 30*time.Second, "the interrupted delivery sent again", func() error {
			if n := recv.attemptsOf(interrupted); n < 2 {
				return fmt.Errorf("delivery %s received %d times", interrupted, n)
			}
			return nil
		})
		waitForDeliveries(t, recv, map[string][]string{trackerID: {"volunteer-updated 1003"}, boardID: {"volunteer-updated 1003"}}, mark)

		// volunteers is killed; the change is committed by the CLI while it
		// is down, and its relay sends it when it is back.
		vol := s.Services["volunteers"]
		vol.Kill()
		vol.Wait()
		mark = len(recv.deliveries())
		importFixture(t, s, "volunteers", map[string]any{"volunteers": []any{
			volunteerRecord(1003, [][2]any{{10, []string{"experience", "assignment"}}, {11, []string{"interest"}}}, 31)}})
		vol.Restart(t)
		got := waitForDeliveries(t, recv, map[string][]string{trackerID: {"volunteer-updated 1003"}, boardID: {"volunteer-updated 1003"}}, mark)
		if h := optionValue(t, got[trackerID][0].Data, "Hours available"); h != "31" {
			t.Errorf("the change committed while volunteers was down arrived as %s", h)
		}
	})

	t.Run("a receiver refuses a changed body or a token it did not get", func(t *testing.T) {
		sample := recv.sample()
		if _, err := recv.verify(sample.App, sample.Token, sample.Body); err != nil {
			t.Fatalf("the sample does not verify: %v", err)
		}
		changed := append([]byte(nil), sample.Body...)
		changed[len(changed)-2] ^= 1
		if _, err := recv.verify(sample.App, sample.Token, changed); err == nil || !strings.Contains(err.Error(), "body_sha256") {
			t.Errorf("a changed body verified: %v", err)
		}
		other := boardID
		if sample.App == boardID {
			other = trackerID
		}
		if _, err := recv.verify(other, sample.Token, sample.Body); err == nil || !strings.Contains(err.Error(), "aud") {
			t.Errorf("another app's token verified: %v", err)
		}
		parts := strings.Split(sample.Token, ".")
		parts[1] = parts[1][:len(parts[1])-2] + "AA"
		if _, err := recv.verify(sample.App, strings.Join(parts, "."), sample.Body); err == nil {
			t.Error("a token with changed claims verified")
		}
		if rej := recv.rejections(); len(rej) != 0 {
			t.Errorf("the receiver rejected %d requests the system sent, e.g. %s", len(rej), rej[0])
		}
	})
}

// optionValue is the value of a volunteer's option.
func optionValue(t *testing.T, data []byte, name string) string {
	t.Helper()
	var v struct {
		Options []struct {
			Name  string
			Value any
		}
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	for _, o := range v.Options {
		if o.Name == name {
			return fmt.Sprint(o.Value)
		}
	}
	return ""
}

// jsonField is the string field of a JSON object body; it fails t when
// there is none.
func jsonField(t *testing.T, body, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	v, _ := m[field].(string)
	if v == "" {
		t.Fatalf("no %s in %s", field, body)
	}
	return v
}
