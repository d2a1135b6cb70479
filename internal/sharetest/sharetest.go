// Package sharetest checks that a Clone method shares no memory with its
// original: every slice and map reachable from the struct's fields, the
// embedded and unexported ones included, is filled, the copy's are
// overwritten, and the original must be unchanged.
package sharetest

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"
)

// Check fails t when clone(v) shares a slice or map with v: v is filled,
// cloned, the clone overwritten, and v must be unchanged. It returns the
// clone for further checks.
func Check[T any](t testing.TB, v *T, clone func(*T) *T) *T {
	t.Helper()
	Fill(v)
	c := clone(v)
	Overwrite(c)
	if f := Shared(v); f != "" {
		t.Errorf("the clone shares %s with the original", f)
	}
	return c
}

// Fill gives every slice of v (a pointer to a struct) one element and every
// map one entry, each holding a marker value, recursively.
func Fill(v any) {
	fill(reflect.ValueOf(v).Elem(), "original")
}

// Overwrite writes a different marker into every element Fill made, through
// v (the clone); an element shared with the original changes it too.
func Overwrite(v any) {
	overwrite(reflect.ValueOf(v).Elem())
}

// Shared names the first field of a (the original, after Overwrite ran on
// its clone) whose contents changed, or "" when none did.
func Shared(a any) string {
	return shared(reflect.ValueOf(a).Elem(), reflect.TypeOf(a).Elem().Name())
}

// settable makes an unexported field writable (tests only).
func settable(f reflect.Value) reflect.Value {
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

func fill(v reflect.Value, marker string) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(settable(v.Field(i)), marker)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), marker)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, "key")
		fill(e, marker)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString(marker)
	}
}

func overwrite(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			overwrite(settable(v.Field(i)))
		}
	case reflect.Slice:
		for i := range v.Len() {
			overwrite(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, "clone")
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString("clone")
	}
}

func shared(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if p := shared(v.Field(i), path+"."+v.Type().Field(i).Name); p != "" {
				return p
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if p := shared(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if p := shared(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k)); p != "" {
				return p
			}
		}
	case reflect.String:
		if v.String() == "clone" {
			return path
		}
	}
	return ""
}
