package convention

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
	// The distroless image has no zoneinfo: the binary carries the zones
	// conventions name.
	_ "time/tzdata"

	"github.com/eventreg/eventreg/libs/fixture"
)

var (
	countryCode = regexp.MustCompile(`^[A-Z]{2}$`)
	// hostName is a DNS name of at least two labels (a registration site's
	// host, no scheme, port or path).
	hostName = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`)
)

// FromFixture validates a fixture's organization and conventions; every
// problem names the record and field, and any problem rejects both. A nil
// organization or conventions list means the file has none (what is stored
// stays).
func FromFixture(org *fixture.Organization, convs []fixture.Convention) (*Organization, []Convention, error) {
	var problems fixture.Problems
	var outOrg *Organization
	if org != nil {
		if strings.TrimSpace(org.Name) == "" {
			problems.Addf("organization: name must not be empty")
		}
		if !countryCode.MatchString(org.Country) {
			problems.Addf("organization: country must be two capital letters (ISO 3166-1 alpha-2), got %q", org.Country)
		}
		outOrg = &Organization{Name: org.Name, Country: org.Country}
	}
	var out []Convention
	if convs != nil {
		out = make([]Convention, 0, len(convs))
	}
	seen := map[string]int{}
	for i, c := range convs {
		where := fmt.Sprintf("conventions[%d] (id %q)", i, c.ID)
		if strings.TrimSpace(c.ID) == "" {
			problems.Addf("%s: id must not be empty", where)
		} else if first, dup := seen[c.ID]; dup {
			problems.Addf("%s: id appears twice (first at conventions[%d])", where, first)
		} else {
			seen[c.ID] = i
		}
		for _, f := range [...]struct{ name, value string }{{"name", c.Name}, {"longName", c.LongName}, {"venue", c.Venue}} {
			if strings.TrimSpace(f.value) == "" {
				problems.Addf("%s: %s must not be empty", where, f.name)
			}
		}
		if len(c.Domain) > 253 || !hostName.MatchString(c.Domain) {
			problems.Addf("%s: domain must be a host name such as reg.example.org, got %q", where, c.Domain)
		}
		start, errStart := time.Parse(time.RFC3339, c.StartAt)
		if errStart != nil {
			problems.Addf("%s: startAt must be an RFC 3339 timestamp with an offset, got %q", where, c.StartAt)
		}
		end, errEnd := time.Parse(time.RFC3339, c.EndAt)
		if errEnd != nil {
			problems.Addf("%s: endAt must be an RFC 3339 timestamp with an offset, got %q", where, c.EndAt)
		}
		if errStart == nil && errEnd == nil && end.Before(start) {
			problems.Addf("%s: endAt is before startAt", where)
		}
		if _, err := loadZone(c.TimeZone); err != nil {
			problems.Addf("%s: timeZone must be an IANA time zone such as America/Chicago, got %q", where, c.TimeZone)
		}
		out = append(out, Convention{ID: c.ID, Name: c.Name, LongName: c.LongName, Domain: strings.ToLower(c.Domain),
			StartAt: start, EndAt: end, TimeZone: c.TimeZone, Venue: c.Venue})
	}
	if err := problems.Err(); err != nil {
		return nil, nil, err
	}
	return outOrg, out, nil
}

// loadZone loads an IANA zone; the empty name and "Local" are refused (they
// would show the server's own zone).
func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("no time zone")
	}
	return time.LoadLocation(name)
}

// ImportResult says what an import did.
type ImportResult struct {
	Organization bool // the organization was in the file and stored
	Conventions  int  // the conventions stored (-1: the file had none; the stored list stayed)
}

// Import validates doc's organization and conventions and stores them: the
// organization replaced, the conventions made exactly the file's list. A
// file with neither changes nothing.
func Import(ctx context.Context, st Store, doc *fixture.Document) (ImportResult, error) {
	res := ImportResult{Conventions: -1}
	org, convs, err := FromFixture(doc.Organization, doc.Conventions)
	if err != nil {
		return res, err
	}
	if org == nil && convs == nil {
		return res, nil
	}
	if err := st.Replace(ctx, org, convs); err != nil {
		return res, err
	}
	res.Organization = org != nil
	if convs != nil {
		res.Conventions = len(convs)
	}
	return res, nil
}

// Shown returns t in the convention's time zone (UTC when the zone no longer
// loads), as the API renders it.
func (c Convention) Shown(t time.Time) time.Time {
	loc, err := loadZone(c.TimeZone)
	if err != nil {
		return t.UTC()
	}
	return t.In(loc)
}
