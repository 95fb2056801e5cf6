package db

import (
	"errors"
	"testing"
)

func TestInvalidFieldsIsInvalid(t *testing.T) {
	err := FieldErrors{"stock": "must be at least 1"}.Err()
	var fe *InvalidFields
	if ErrorCode(err) != EINVALID || ErrorMessage(err) != "stock: must be at least 1" || !errors.As(err, &fe) {
		t.Fatalf("got %q %q", ErrorCode(err), ErrorMessage(err))
	}
	if (FieldErrors{}).Err() != nil {
		t.Fatal("no field errors must be no error")
	}
}
