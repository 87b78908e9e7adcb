package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/servicetoken"
)

// A producer writes an event in the transaction of its change; its serve
// process runs a relay that renders and hands the events to auth.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return
	}
	defer pool.Close()

	// The change and its event, in one transaction.
	type snapshot struct {
		UserID int64  `json:"userId"`
		Email  string `json:"email"`
	}
	_ = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE users SET email = $2 WHERE id = $1`, 1001, "al@example.org"); err != nil {
			return err
		}
		return outbox.Add(ctx, tx, outbox.Event{Type: authapi.EventUserUpdated, Resource: "user:1001",
			Payload: snapshot{UserID: 1001, Email: "al@example.org"}})
	})

	// The relay, in serve, signing its calls to auth with the shared key.
	credentials := servicetoken.NewSigner(servicetoken.Config{Key: os.Getenv("INTERNAL_AUTH_KEY")}, "users")
	relay, err := outbox.NewRelay(outbox.Config{
		Pool:   pool,
		Source: "users",
		Render: func(ctx context.Context, rows []outbox.Row) ([]json.RawMessage, error) {
			out := make([]json.RawMessage, len(rows))
			for i, r := range rows {
				out[i] = r.Payload // a real service renders as its read API does
			}
			return out, nil
		},
		Publish: outbox.PublishTo(authapi.NewClient("http://auth:9090", 10*time.Second, credentials)),
		Log:     slog.Default(),
	})
	if err != nil {
		return
	}
	stop := relay.Start(ctx)
	defer func() { _ = stop(context.Background()) }()
}

// A record of one convention is named by its kind, the convention and its
// key: a registration by its user's id.
func ExampleConventionResource() {
	fmt.Println(outbox.ConventionResource("registration", "2026", 1001))
	// Output: registration:2026:1001
}
