package role

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
)

// NarrowedEventType is the outbox type of a notice that a user's
// permissions may have narrowed (a role removed, a permission taken from a
// role, the user's convention memberships lapsed). It is not a webhook: the
// users relay tells auth's Notifier instead of publishing it
// (PublishNotices), so the notice is written in the transaction of the
// change and retried until auth has it, as the change's events are.
const NarrowedEventType = "permissions-narrowed"

// Narrowed is the payload of a NarrowedEventType notice.
type Narrowed struct {
	UserID int64 `json:"userId"`
}

// NarrowedEvent is the notice for userID, to write with the change.
func NarrowedEvent(userID int64) outbox.Event {
	return outbox.Event{Type: NarrowedEventType, Resource: "user:" + strconv.FormatInt(userID, 10), Payload: Narrowed{UserID: userID}}
}

// ParseNarrowed reads a notice's payload (or its rendering, the same JSON).
func ParseNarrowed(data []byte) (Narrowed, error) {
	var n Narrowed
	if err := json.Unmarshal(data, &n); err != nil {
		return n, fmt.Errorf("reading a %s notice: %w", NarrowedEventType, err)
	}
	if n.UserID <= 0 {
		return n, fmt.Errorf("reading a %s notice: no user id", NarrowedEventType)
	}
	return n, nil
}

// PublishNotices returns the relay's PublishFunc: the events of a batch in
// order, runs of webhook events handed to next (auth's event intake) and
// each NarrowedEventType notice told to n, once per user per run. Any
// failure fails the batch, which the relay retries whole with backoff: auth
// deduplicates the events it has and UserChanged is idempotent (it revokes
// what the user's permissions, read again, no longer allow).
func PublishNotices(n Notifier, next outbox.PublishFunc) outbox.PublishFunc {
	return func(ctx context.Context, events []authapi.Event) error {
		start := 0
		for start < len(events) {
			end := start
			notices := events[start].Type == NarrowedEventType
			for end < len(events) && (events[end].Type == NarrowedEventType) == notices {
				end++
			}
			if err := publishRun(ctx, n, next, events[start:end], notices); err != nil {
				return err
			}
			start = end
		}
		return nil
	}
}

func publishRun(ctx context.Context, n Notifier, next outbox.PublishFunc, run []authapi.Event, notices bool) error {
	if !notices {
		return next(ctx, run)
	}
	told := map[int64]bool{}
	for _, e := range run {
		x, err := ParseNarrowed(e.Data)
		if err != nil {
			return err // RenderEvents sets such a row aside: not reached
		}
		if told[x.UserID] {
			continue
		}
		nctx, cancel := context.WithTimeout(ctx, notifyTimeout)
		_, err = n.UserChanged(nctx, x.UserID)
		cancel()
		if err != nil {
			return fmt.Errorf("telling auth that the permissions of user %d narrowed: %w", x.UserID, err)
		}
		told[x.UserID] = true
	}
	return nil
}
