// Package jsonschema describes the arguments of the tools offered to a
// model: the small part of JSON Schema that function calling uses, and a
// generator that derives a schema from a Go parameter struct.
package jsonschema

import (
	"fmt"
	"reflect"
	"strings"
)

// Type is a JSON Schema type name.
type Type string

// The types a tool's arguments use.
const (
	Object  Type = "object"
	Array   Type = "array"
	String  Type = "string"
	Integer Type = "integer"
	Number  Type = "number"
	Boolean Type = "boolean"
)

// Schema is one JSON Schema. Its JSON is what the chat completions API
// takes as a function's parameters.
type Schema struct {
	Type        Type              `json:"type,omitempty"`
	Description string            `json:"description,omitempty"`
	Enum        []string          `json:"enum,omitempty"`
	Properties  map[string]Schema `json:"properties,omitempty"`
	Required    []string          `json:"required,omitempty"`
	Items       *Schema           `json:"items,omitempty"`
	// AdditionalProperties, when set, says whether an object may carry
	// properties it does not list.
	AdditionalProperties *bool `json:"additionalProperties,omitempty"`
}

// For derives the schema of the JSON encoding of T, which must be a struct.
// A field is named by its json tag and required unless the tag says
// omitempty; a description tag describes it and an enum tag
// (comma-separated) lists its values.
func For[T any]() (*Schema, error) {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("jsonschema: %s is not a struct", t)
	}
	return of(t)
}

func of(t reflect.Type) (*Schema, error) {
	switch t.Kind() {
	case reflect.Pointer:
		return of(t.Elem())
	case reflect.String:
		return &Schema{Type: String}, nil
	case reflect.Bool:
		return &Schema{Type: Boolean}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &Schema{Type: Integer}, nil
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: Number}, nil
	case reflect.Slice, reflect.Array:
		items, err := of(t.Elem())
		if err != nil {
			return nil, err
		}
		return &Schema{Type: Array, Items: items}, nil
	case reflect.Struct:
		return object(t)
	}
	return nil, fmt.Errorf("jsonschema: no schema for a field of type %s", t)
}

func object(t reflect.Type) (*Schema, error) {
	closed := false
	s := &Schema{Type: Object, Properties: map[string]Schema{}, AdditionalProperties: &closed}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		prop, err := of(f.Type)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		prop.Description = f.Tag.Get("description")
		if enum := f.Tag.Get("enum"); enum != "" {
			prop.Enum = strings.Split(enum, ",")
		}
		s.Properties[name] = *prop
		if !strings.Contains(","+opts+",", ",omitempty,") {
			s.Required = append(s.Required, name)
		}
	}
	return s, nil
}
