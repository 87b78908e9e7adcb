package convention

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/fixture"
)

// countingStore answers Read with what it holds and counts the reads.
type countingStore struct {
	mu    sync.Mutex
	cfg   Config
	err   error
	reads atomic.Int64
	gate  chan struct{} // when not nil, Read waits for it
}

func (s *countingStore) Read(ctx context.Context) (Config, error) {
	s.reads.Add(1)
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg, s.err
}

func (s *countingStore) Replace(context.Context, *Organization, []Convention) error { return nil }

func (s *countingStore) set(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg, s.err = Config{Organization: Organization{Name: name, Country: "US"}}, err
}

func TestServiceKeepsWhatItReadForTheTTL(t *testing.T) {
	st := &countingStore{}
	st.set("first", nil)
	svc := NewService(st, time.Minute)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc.now = func() time.Time { return now }
	ctx := context.Background()

	t.Run("a second read within the TTL does not reach the store", func(t *testing.T) {
		for range 3 {
			c, err := svc.Get(ctx)
			if err != nil || c.Organization.Name != "first" {
				t.Fatalf("%+v %v", c, err)
			}
		}
		if n := st.reads.Load(); n != 1 {
			t.Fatalf("%d reads, want 1", n)
		}
	})
	t.Run("after the TTL a change in the store shows", func(t *testing.T) {
		st.set("second", nil)
		now = now.Add(59 * time.Second)
		if c, _ := svc.Get(ctx); c.Organization.Name != "first" {
			t.Fatalf("changed before the TTL: %+v", c)
		}
		now = now.Add(2 * time.Second)
		if c, _ := svc.Get(ctx); c.Organization.Name != "second" {
			t.Fatalf("not changed after the TTL: %+v", c)
		}
	})
	t.Run("a failed read is not kept", func(t *testing.T) {
		now = now.Add(time.Hour)
		st.set("", ErrNotConfigured)
		if _, err := svc.Get(ctx); !errors.Is(err, ErrNotConfigured) {
			t.Fatalf("err %v", err)
		}
		st.set("third", nil)
		if c, err := svc.Get(ctx); err != nil || c.Organization.Name != "third" {
			t.Fatalf("the failure was kept: %+v %v", c, err)
		}
	})
}

func TestServiceSharesOneReadBetweenConcurrentMisses(t *testing.T) {
	st := &countingStore{gate: make(chan struct{})}
	st.set("shared", nil)
	svc := NewService(st, time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := svc.Get(context.Background())
			if err == nil && c.Organization.Name != "shared" {
				err = errors.New("wrong config " + c.Organization.Name)
			}
			errs <- err
		}()
	}
	// Let every caller reach the flight before the store answers.
	deadline := time.Now().Add(5 * time.Second)
	for st.reads.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(st.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := st.reads.Load(); n > 2 {
		t.Fatalf("%d reads for 20 concurrent callers", n)
	}
}

func TestFromFixture(t *testing.T) {
	good := fixture.Convention{ID: "2026", Name: "ExampleCon 2026", LongName: "ExampleCon 2026: Stars", Domain: "Reg.Example.org",
		StartAt: "2026-07-02T10:00:00-05:00", EndAt: "2026-07-05T18:00:00-05:00", TimeZone: "America/Chicago", Venue: "Hall"}
	t.Run("a valid file gives the organization and conventions", func(t *testing.T) {
		org, convs, err := FromFixture(&fixture.Organization{Name: "Society", Country: "US"}, []fixture.Convention{good})
		if err != nil {
			t.Fatal(err)
		}
		if org.Name != "Society" || len(convs) != 1 || convs[0].Domain != "reg.example.org" ||
			!convs[0].StartAt.Equal(time.Date(2026, 7, 2, 15, 0, 0, 0, time.UTC)) {
			t.Fatalf("%+v %+v", org, convs)
		}
		if got := convs[0].Shown(convs[0].StartAt).Format(time.RFC3339); got != "2026-07-02T10:00:00-05:00" {
			t.Fatalf("shown as %s", got)
		}
	})
	t.Run("absent sections are nil, an empty list is an empty list", func(t *testing.T) {
		org, convs, err := FromFixture(nil, nil)
		if err != nil || org != nil || convs != nil {
			t.Fatalf("%v %v %v", org, convs, err)
		}
		_, convs, err = FromFixture(nil, []fixture.Convention{})
		if err != nil || convs == nil || len(convs) != 0 {
			t.Fatalf("%v %v", convs, err)
		}
	})
	bad := func(mut func(*fixture.Convention)) []fixture.Convention {
		c := good
		mut(&c)
		return []fixture.Convention{c}
	}
	cases := map[string]struct {
		org   *fixture.Organization
		convs []fixture.Convention
		want  string
	}{
		"a country that is not two capital letters": {&fixture.Organization{Name: "S", Country: "usa"}, nil, "organization: country"},
		"an organization without a name":            {&fixture.Organization{Country: "US"}, nil, "organization: name"},
		"a start without an offset":                 {nil, bad(func(c *fixture.Convention) { c.StartAt = "2026-07-02T10:00:00" }), "startAt"},
		"an end before the start":                   {nil, bad(func(c *fixture.Convention) { c.EndAt = "2026-07-01T10:00:00Z" }), "endAt is before startAt"},
		"an unknown time zone":                      {nil, bad(func(c *fixture.Convention) { c.TimeZone = "Mars/Olympus" }), "timeZone"},
		"the server's own zone":                     {nil, bad(func(c *fixture.Convention) { c.TimeZone = "Local" }), "timeZone"},
		"a domain with a scheme":                    {nil, bad(func(c *fixture.Convention) { c.Domain = "https://reg.example.org" }), "domain"},
		"an empty long name":                        {nil, bad(func(c *fixture.Convention) { c.LongName = " " }), "longName must not be empty"},
		"the same id twice":                         {nil, append(bad(func(*fixture.Convention) {}), good), "id appears twice"},
	}
	for name, tc := range cases {
		t.Run("refused: "+name, func(t *testing.T) {
			_, _, err := FromFixture(tc.org, tc.convs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %q", err, tc.want)
			}
		})
	}
}
