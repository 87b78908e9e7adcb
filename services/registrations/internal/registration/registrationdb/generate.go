package registrationdb

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/bulkload"
)

// GenerateOptions describe synthetic registrations for benchmarks: the
// range of users must hold at least Count ids.
type GenerateOptions = bulkload.Users

// Generate writes synthetic registrations with COPY in one transaction. It
// refuses to touch a range where the convention already has registrations.
func (s *Store) Generate(ctx context.Context, o GenerateOptions) (int64, error) {
	gen := bulkload.PerUser{Table: "registrations", Users: o, Need: "--registrations >= 1 and 1 <= --users-from <= --users-to"}
	return bulkload.Generate(ctx, s.pool, gen, func(ctx context.Context, tx pgx.Tx, progress *bulkload.Progress) (int64, error) {
		products := []struct{ id, name, display string }{{"5", "Attendee", "Attendee Weekend"}, {"6", "Staff", "Staff Weekend"}, {"7", "Sponsor", "Sponsor Weekend"}, {"8", "Day Pass", ""}}
		days := [][]byte{[]byte(`["Fri"]`), []byte(`["Sat"]`), []byte(`["Fri","Sat"]`), []byte(`["Fri","Sat","Sun"]`)}
		sizes := []string{"S", "M", "L", "XL"}
		return bulkload.Copy(ctx, tx, pgx.Identifier{"registrations"}, []string{"convention_id", "user_id", "badge_name", "status",
			"order_id", "product_id", "product_name", "product_display_name", "options", "flags"}, o.Count,
			func(i int64) []any {
				userID := gen.UserID(i)
				p := products[i%int64(len(products))]
				var display *string
				if p.display != "" {
					display = &p.display
				}
				status, order := "paid", any("G"+strconv.FormatInt(100000+i, 10))
				if i%5 == 4 {
					status, order = "unpaid", nil
				}
				options := []byte(`[{"name":"Days","type":"multi","value":` + string(days[i%4]) + `},` +
					`{"name":"Shirt size","type":"select","value":"` + sizes[i%4] + `"},` +
					`{"name":"Dinner guests","type":"number","value":` + strconv.FormatInt(i%3, 10) + `}]`)
				flags := []byte(`[]`)
				if i%20 == 0 {
					flags = []byte(`[{"id":"3","shortName":"VIP"}]`)
				}
				return []any{o.ConventionID, userID, "Badge " + strconv.FormatInt(userID, 10), status, order, p.id, p.name, display, options, flags}
			}, progress)
	})
}
