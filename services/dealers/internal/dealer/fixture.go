package dealer

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/eventreg/eventreg/libs/eventoption"
	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/postal"
)

// countryCode is an ISO 3166-1 alpha-2 code's shape.
var countryCode = regexp.MustCompile(`^[A-Z]{2}$`)

// FromFixture validates the dealers section of a fixture for convention and
// returns the dealers with their applications of that convention; every
// problem names the record and field, and any problem rejects the whole
// section. A dealer whose record has no applications list comes back with
// Applications nil (its stored applications are left alone); an empty list
// is an empty, non-nil slice (they are all removed).
func FromFixture(convention string, recs []fixture.Dealer) ([]Dealer, error) {
	var problems fixture.Problems
	if strings.TrimSpace(convention) == "" {
		problems.Addf("conventionId: the file has none and CONVENTION_ID is not set")
	}
	out := make([]Dealer, 0, len(recs))
	keys := fixture.NewKeys("dealers", "id")
	appKeys := map[int64]string{}
	areas := map[int64]string{}
	for i, rec := range recs {
		where := keys.Check(&problems, i, rec.ID)
		if rec.UserID < 1 {
			problems.Addf("%s: userId must be a positive integer", where)
		}
		for _, f := range [][2]string{{"name", rec.Name}, {"addressLine1", rec.AddressLine1}, {"addressCity", rec.AddressCity}} {
			if strings.TrimSpace(f[1]) == "" {
				problems.Addf("%s: %s must not be empty", where, f[0])
			}
		}
		if !countryCode.MatchString(rec.AddressCountry) {
			problems.Addf("%s: addressCountry must be two capital letters (ISO 3166-1), got %q", where, rec.AddressCountry)
		}
		if rec.Email != nil && !strings.Contains(strings.TrimSpace(*rec.Email), "@") {
			problems.Addf("%s: email must be an address when given (got %q)", where, *rec.Email)
		}
		opts, err := parseOptions(rec.Options, eventoption.OnlyKnownWithContact)
		if err != nil {
			problems.Addf("%s: %v", where, err)
		}
		d := Dealer{ID: rec.ID, UserID: rec.UserID, ConventionID: convention, Name: rec.Name, Email: rec.Email,
			Address: postal.Address{AddressLine1: rec.AddressLine1, AddressLine2: rec.AddressLine2, AddressCity: rec.AddressCity,
				AddressZipcode: rec.AddressZipcode, AddressState: rec.AddressState, AddressCountry: rec.AddressCountry},
			Options: storedJSON(opts)}
		if rec.Applications != nil {
			d.Applications = make([]Application, 0, len(rec.Applications))
		}
		for k, a := range rec.Applications {
			at := fmt.Sprintf("%s: applications[%d] (id %d)", where, k, a.ID)
			if a.ID < 1 {
				problems.Addf("%s: id must be a positive integer", at)
			} else if other, dup := appKeys[a.ID]; dup {
				problems.Addf("%s: id appears twice (also %s)", at, other)
			} else {
				appKeys[a.ID] = at
			}
			app, errs := application(a, areas)
			for _, e := range errs {
				problems.Addf("%s: %s", at, e)
			}
			app.DealerID, app.ConventionID = rec.ID, convention
			d.Applications = append(d.Applications, app)
		}
		out = append(out, d)
	}
	if err := problems.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// application validates one fixture application; areas holds the name each
// area id has in the file (one name per area).
func application(a fixture.DealerApplication, areas map[int64]string) (Application, []string) {
	var errs []string
	if !slices.Contains(Statuses, a.Status) {
		errs = append(errs, fmt.Sprintf("status must be one of %s (got %q)", strings.Join(Statuses, ", "), a.Status))
	}
	if a.TableNumber != nil && strings.TrimSpace(*a.TableNumber) == "" {
		errs = append(errs, "tableNumber must not be empty when given")
	}
	table, err := product(a.TableType)
	if err != nil {
		errs = append(errs, "tableType."+err.Error())
	}
	addOns := make([]Product, 0, len(a.DealerRequestTypes))
	seen := map[string]bool{}
	for k, p := range a.DealerRequestTypes {
		pr, err := product(p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("dealerRequestTypes[%d].%v", k, err))
		case seen[p.ID]:
			errs = append(errs, fmt.Sprintf("dealerRequestTypes[%d].id %q appears twice", k, p.ID))
		}
		seen[p.ID] = true
		addOns = append(addOns, pr)
	}
	switch name, known := areas[a.DealerArea.ID]; {
	case a.DealerArea.ID < 1:
		errs = append(errs, "dealerArea.id must be a positive integer")
	case strings.TrimSpace(a.DealerArea.Name) == "":
		errs = append(errs, "dealerArea.name must not be empty")
	case known && name != a.DealerArea.Name:
		errs = append(errs, fmt.Sprintf("dealerArea %d is named both %q and %q in the file", a.DealerArea.ID, name, a.DealerArea.Name))
	default:
		areas[a.DealerArea.ID] = a.DealerArea.Name
	}
	opts, err := parseOptions(a.Options, eventoption.OnlyKnown)
	if err != nil {
		errs = append(errs, err.Error())
	}
	return Application{ID: a.ID, Status: a.Status, SpecialRequests: a.SpecialRequests, TableNumber: a.TableNumber,
		DealerRequestTypes: storedJSON(addOns), TableType: storedJSON(table), AreaID: a.DealerArea.ID,
		AreaName: a.DealerArea.Name, Options: storedJSON(opts)}, errs
}

func product(p fixture.Product) (Product, error) {
	switch {
	case strings.TrimSpace(p.ID) == "":
		return Product{}, fmt.Errorf("id must not be empty")
	case strings.TrimSpace(p.Name) == "":
		return Product{}, fmt.Errorf("name must not be empty")
	case p.DisplayName != nil && strings.TrimSpace(*p.DisplayName) == "":
		return Product{}, fmt.Errorf("displayName must not be empty when given")
	}
	return Product{ID: p.ID, Name: p.Name, Paid: p.Paid, DisplayName: p.DisplayName}, nil
}

// parseOptions checks options with their ids (positive, once each) and
// types (rule).
func parseOptions(opts []fixture.DealerOption, rule eventoption.Rule) ([]Option, error) {
	out := make([]Option, 0, len(opts))
	seen := map[int64]bool{}
	for i, o := range opts {
		if o.ID < 1 {
			return nil, fmt.Errorf("options[%d].id: must be a positive integer", i)
		}
		if seen[o.ID] {
			return nil, fmt.Errorf("options[%d].id: %d appears twice", i, o.ID)
		}
		seen[o.ID] = true
		p, err := eventoption.Parse(fixture.Option{Name: o.Name, Type: o.Type, Value: o.Value}, rule)
		if err != nil {
			return nil, fmt.Errorf("options[%d].%w", i, err)
		}
		out = append(out, Option{ID: strconv.FormatInt(o.ID, 10), Name: p.Name, Type: p.Type, Value: p.Value})
	}
	return out, nil
}

// storedJSON is a value as Dealer and Application hold it; a nil or empty
// slice is [].
func storedJSON[T any](v T) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil { // strings, booleans and canonical JSON values
		panic(fmt.Sprintf("dealer: encoding %T: %v", v, err))
	}
	if string(b) == "null" {
		return json.RawMessage(`[]`)
	}
	return b
}

// ImportResult counts what an import did to dealers (a dealer one of whose
// applications changed is updated).
type ImportResult struct {
	Inserted, Updated, Unchanged int64
}

// ImportStore is what Import needs of the store (dealerdb.Store).
type ImportStore interface {
	// Import stores validated dealers and their applications of convention in
	// one transaction, with the events of the dealers that changed.
	Import(ctx context.Context, convention string, dealers []Dealer) (ImportResult, error)
}

// Import loads the dealers of doc, their applications for the convention doc
// names or else for convention, all or nothing: the one fixture import, which
// `dealers import` and the tests run. It returns the convention used.
func Import(ctx context.Context, st ImportStore, doc *fixture.Document, convention string) (string, ImportResult, error) {
	if doc.ConventionID != "" {
		convention = doc.ConventionID
	}
	dealers, err := FromFixture(convention, doc.Dealers)
	if err != nil {
		return convention, ImportResult{}, err
	}
	res, err := st.Import(ctx, convention, dealers)
	return convention, res, err
}
