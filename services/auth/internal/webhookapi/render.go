package webhookapi

import (
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// subscriptionJSON is a subscription as the API renders it.
type subscriptionJSON struct {
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	Events         []string   `json:"events"`
	Description    string     `json:"description"`
	Format         string     `json:"format"`
	State          string     `json:"state"`
	DisabledReason *string    `json:"disabledReason"`
	DisabledBy     *string    `json:"disabledBy"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	FailingSince   *time.Time `json:"failingSince"`
}

func renderSubscription(s webhook.Subscription) subscriptionJSON {
	return subscriptionJSON{ID: s.ID, URL: s.URL, Events: s.Events, Description: s.Description, Format: string(s.Format), State: string(s.State),
		DisabledReason: optionalString(s.DisabledReason), DisabledBy: optionalString(string(s.DisabledBy)), CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(),
		FailingSince: optionalTime(s.FailingSince)}
}

// deliveryJSON is a delivery as the API renders it.
type deliveryJSON struct {
	ID            string     `json:"id"`
	EventID       string     `json:"eventId"`
	Event         string     `json:"event"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	LastStatus    *int       `json:"lastStatus"`
	LastError     *string    `json:"lastError"`
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	DeliveredAt   *time.Time `json:"deliveredAt"`
	CreatedAt     time.Time  `json:"createdAt"`
}

func renderDelivery(d webhook.Delivery) deliveryJSON {
	out := deliveryJSON{ID: d.ID, EventID: d.EventID, Event: d.Event, State: string(d.State), Attempts: d.Attempts,
		LastError: optionalString(d.LastError), NextAttemptAt: optionalTime(d.NextAttemptAt), DeliveredAt: optionalTime(d.DeliveredAt),
		CreatedAt: d.CreatedAt.UTC()}
	if d.LastStatus != 0 {
		out.LastStatus = &d.LastStatus
	}
	return out
}

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
