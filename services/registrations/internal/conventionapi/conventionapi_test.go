package conventionapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/registrations/internal/cli"
	"github.com/eventreg/eventreg/services/registrations/internal/config"
	"github.com/eventreg/eventreg/services/registrations/internal/server"
	"github.com/eventreg/eventreg/services/registrations/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func start(t *testing.T) *resourcetest.Env {
	return resourcetest.Start(t, migrations.Set(), resourcetest.Options{Service: "registrations", Convention: "2026"},
		func(ctx context.Context, c resourcetest.Config, rt *service.Runtime) error {
			return server.Mount(ctx, config.Serve{Base: c.Base, Resource: c.Resource, UsersClient: c.Users}, rt)
		})
}

const configFixture = `{
  "conventionId": "2026",
  "organization": {"name": "Example Convention Society", "country": "US"},
  "conventions": [
    {"id": "2026", "name": "ExampleCon 2026", "longName": "ExampleCon 2026: Among the Stars", "domain": "reg.example.org",
     "startAt": "2026-07-02T15:00:00Z", "endAt": "2026-07-05T23:00:00Z", "timeZone": "America/Chicago", "venue": "Springfield"},
    {"id": "2025", "name": "ExampleCon 2025", "longName": "ExampleCon 2025: Under the Sea", "domain": "reg2025.example.org",
     "startAt": "2025-07-03T10:00:00+02:00", "endAt": "2025-07-06T18:00:00+02:00", "timeZone": "Europe/Berlin", "venue": "Berlin"}
  ]
}`

type configBody struct {
	Organization struct{ Name, Country string }
	Conventions  []struct{ ID, Name, LongName, Domain, StartAt, EndAt, TimeZone, Venue string }
}

func TestPublicConfiguration(t *testing.T) {
	e := start(t)

	t.Run("before any import it is 404, not a 500", func(t *testing.T) {
		r := e.Get(t, "/api/config", "")
		if r.Status != http.StatusNotFound || !strings.Contains(r.ErrorMessage(t, "resource"), "not been configured") {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	out, err := e.RunCLI(t, cli.Root(), "import", resourcetest.WriteFixture(t, configFixture))
	if err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if !strings.Contains(out, "organization stored") || !strings.Contains(out, "conventions: 2 stored") {
		t.Fatalf("import said %q", out)
	}
	t.Run("without a token it answers the organization and conventions in start order with their offsets", func(t *testing.T) {
		r := e.Get(t, "/api/config", "")
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		var got configBody
		r.JSON(t, &got)
		if got.Organization.Name != "Example Convention Society" || got.Organization.Country != "US" || len(got.Conventions) != 2 {
			t.Fatalf("%s", r.Body)
		}
		c25, c26 := got.Conventions[0], got.Conventions[1]
		if c25.ID != "2025" || c25.StartAt != "2025-07-03T10:00:00+02:00" || c25.EndAt != "2025-07-06T18:00:00+02:00" {
			t.Errorf("2025: %+v", c25)
		}
		if c26.ID != "2026" || c26.StartAt != "2026-07-02T10:00:00-05:00" || c26.Domain != "reg.example.org" ||
			c26.LongName != "ExampleCon 2026: Among the Stars" || c26.Venue != "Springfield" || c26.TimeZone != "America/Chicago" {
			t.Errorf("2026: %+v", c26)
		}
		if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=10" {
			t.Errorf("Cache-Control %q", cc)
		}
	})
	t.Run("a garbage bearer token is ignored", func(t *testing.T) {
		r := e.Get(t, "/api/config", "not-a-jwt")
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("an expired token is ignored too", func(t *testing.T) {
		if r := e.Get(t, "/api/config", e.Tokens.Expired(t, "registration:read")); r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("a bad file is refused whole and changes nothing", func(t *testing.T) {
		bad := strings.Replace(configFixture, `"country": "US"`, `"country": "United States"`, 1)
		bad = strings.Replace(bad, `"Springfield"`, `"Elsewhere"`, 1)
		if _, err := e.RunCLI(t, cli.Root(), "import", resourcetest.WriteFixture(t, bad)); err == nil || !strings.Contains(err.Error(), "organization: country") {
			t.Fatalf("err %v", err)
		}
		var n int
		if err := e.Pool.QueryRow(context.Background(), `SELECT count(*) FROM conventions WHERE venue = 'Elsewhere'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("a refused file changed %d conventions (%v)", n, err)
		}
	})
	t.Run("an import makes the list exactly the file's", func(t *testing.T) {
		one := `{"conventions": [{"id": "2027", "name": "ExampleCon 2027", "longName": "ExampleCon 2027", "domain": "reg.example.org",
		  "startAt": "2027-07-01T10:00:00-05:00", "endAt": "2027-07-04T18:00:00-05:00", "timeZone": "America/Chicago", "venue": "Springfield"}]}`
		if out, err := e.RunCLI(t, cli.Root(), "import", resourcetest.WriteFixture(t, one)); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		rows, err := e.Pool.Query(context.Background(), `SELECT id FROM conventions`)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for rows.Next() {
			var id string
			_ = rows.Scan(&id)
			ids = append(ids, id)
		}
		var org string
		_ = e.Pool.QueryRow(context.Background(), `SELECT name FROM organization`).Scan(&org)
		if strings.Join(ids, ",") != "2027" || org != "Example Convention Society" {
			t.Fatalf("conventions %v, organization %q (a file without organization keeps it)", ids, org)
		}
	})
}
