// Package postal is the postal address as the API, the fixture format and
// the records stored with it write it: addressLine1 to addressCountry.
package postal

// Address is a postal address. Embedded in a struct, its fields are the
// struct's own in JSON.
type Address struct {
	AddressLine1   string  `json:"addressLine1"`
	AddressLine2   *string `json:"addressLine2"`
	AddressCity    string  `json:"addressCity"`
	AddressZipcode string  `json:"addressZipcode"`
	AddressState   string  `json:"addressState"`
	AddressCountry string  `json:"addressCountry"`
}
