package registration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/eventreg/eventreg/libs/eventoption"
	"github.com/eventreg/eventreg/libs/fixture"
)

// FromFixture validates the registrations section of a fixture for
// convention and returns them; every problem names the record and field, and
// any problem rejects the whole section.
func FromFixture(convention string, recs []fixture.Registration) ([]Registration, error) {
	var problems fixture.Problems
	if strings.TrimSpace(convention) == "" {
		problems.Addf("conventionId: the file has none and CONVENTION_ID is not set")
	}
	out := make([]Registration, 0, len(recs))
	keys := fixture.NewKeys("registrations", "userId")
	for i, rec := range recs {
		where := keys.Check(&problems, i, rec.UserID)
		if strings.TrimSpace(rec.BadgeName) == "" {
			problems.Addf("%s: badgeName must not be empty", where)
		}
		if rec.Status != StatusPaid && rec.Status != StatusUnpaid {
			problems.Addf("%s: status must be paid or unpaid (got %q)", where, rec.Status)
		}
		if rec.OrderID != nil && strings.TrimSpace(*rec.OrderID) == "" {
			problems.Addf("%s: orderId must not be empty when given", where)
		}
		if strings.TrimSpace(rec.ProductID) == "" {
			problems.Addf("%s: productId must not be empty", where)
		}
		if strings.TrimSpace(rec.ProductName) == "" {
			problems.Addf("%s: productName must not be empty", where)
		}
		opts, err := eventoption.ParseAll(rec.Options, eventoption.OnlyKnown)
		if err != nil {
			problems.Addf("%s: %v", where, err)
		}
		flags := make([]Flag, 0, len(rec.Flags))
		seenFlag := map[string]bool{}
		for k, f := range rec.Flags {
			switch {
			case strings.TrimSpace(f.ID) == "":
				problems.Addf("%s: flags[%d].id must not be empty", where, k)
			case strings.TrimSpace(f.ShortName) == "":
				problems.Addf("%s: flags[%d].shortName must not be empty", where, k)
			case seenFlag[f.ID]:
				problems.Addf("%s: flags[%d].id %q appears twice", where, k, f.ID)
			}
			seenFlag[f.ID] = true
			flags = append(flags, Flag{ID: f.ID, ShortName: f.ShortName})
		}
		out = append(out, Registration{
			ConventionID: convention, UserID: rec.UserID, BadgeName: rec.BadgeName, Status: rec.Status,
			OrderID: rec.OrderID, ProductID: rec.ProductID, ProductName: rec.ProductName,
			ProductDisplayName: rec.ProductDisplayName, Options: storedArray(opts), Flags: storedArray(flags),
		})
	}
	if err := problems.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// storedArray is options or flags as Registration holds them: a JSON
// array, [] when there are none.
func storedArray[T any](items []T) json.RawMessage {
	if len(items) == 0 {
		return json.RawMessage(`[]`)
	}
	b, err := json.Marshal(items)
	if err != nil { // options and flags are strings and canonical JSON values
		panic(fmt.Sprintf("registration: encoding %T: %v", items, err))
	}
	return b
}

// ImportResult counts what an import did.
type ImportResult struct {
	Inserted, Updated, Unchanged int64
}

// ImportStore is what Import needs of the store (registrationdb.Store).
type ImportStore interface {
	// Import stores validated registrations in one transaction, with their
	// events.
	Import(ctx context.Context, regs []Registration) (ImportResult, error)
}

// Import loads the registrations of doc, for the convention doc names or
// else for convention, all or nothing: the one fixture import, which
// `registrations import` and the tests run. It returns the convention used.
func Import(ctx context.Context, st ImportStore, doc *fixture.Document, convention string) (string, ImportResult, error) {
	if doc.ConventionID != "" {
		convention = doc.ConventionID
	}
	regs, err := FromFixture(convention, doc.Registrations)
	if err != nil {
		return convention, ImportResult{}, err
	}
	res, err := st.Import(ctx, regs)
	return convention, res, err
}
