package registrationapi

import (
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// orderViewJSON is an order as GET /api/v0/users/{id}/orders renders it.
type orderViewJSON struct {
	ID           string     `json:"id"`
	ConventionID string     `json:"conventionId"`
	Status       string     `json:"status"`
	Items        []itemJSON `json:"items"`
	CreatedAt    string     `json:"createdAt"`
	UpdatedAt    string     `json:"updatedAt"`
}

type itemJSON struct {
	ProductID          string  `json:"productId"`
	ProductName        string  `json:"productName"`
	ProductDisplayName *string `json:"productDisplayName"`
}

func toOrderJSON(o registration.Order) orderViewJSON {
	items := make([]itemJSON, len(o.Items))
	for i, it := range o.Items {
		items[i] = itemJSON{ProductID: it.ProductID, ProductName: it.ProductName, ProductDisplayName: it.ProductDisplayName}
	}
	return orderViewJSON{ID: o.ID, ConventionID: o.ConventionID, Status: o.Status, Items: items,
		CreatedAt: o.CreatedAt.UTC().Format(apireply.TimeFormat), UpdatedAt: o.UpdatedAt.UTC().Format(apireply.TimeFormat)}
}
