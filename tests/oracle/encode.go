package main

import (
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"sort"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"
)

// typed is a CEL value as JSON with its CEL type name, so that int, uint and double stay apart:
// scalars as JSON (doubles that JSON cannot hold as "NaN", "+Inf", "-Inf"; bytes base64; timestamps
// RFC 3339 with nanoseconds in UTC; durations as integer nanoseconds), lists as lists of typed, maps as
// lists of [key, value] pairs of typed (keys of several types stay apart), optionals as their value or
// null, type values as their name, and Kubernetes' opaque types (Quantity, URL, IP, CIDR, Semver...)
// as their text.
type typed struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

func encode(value ref.Val) (*typed, error) {
	if types.IsError(value) {
		return nil, fmt.Errorf("%v", value)
	}
	if types.IsUnknown(value) {
		return nil, fmt.Errorf("unknown value %v", value)
	}
	switch v := value.(type) {
	case types.Bool:
		return &typed{"bool", bool(v)}, nil
	case types.Int:
		return &typed{"int", int64(v)}, nil
	case types.Uint:
		return &typed{"uint", uint64(v)}, nil
	case types.Double:
		f := float64(v)
		switch {
		case math.IsNaN(f):
			return &typed{"double", "NaN"}, nil
		case math.IsInf(f, 1):
			return &typed{"double", "+Inf"}, nil
		case math.IsInf(f, -1):
			return &typed{"double", "-Inf"}, nil
		}
		return &typed{"double", f}, nil
	case types.String:
		return &typed{"string", string(v)}, nil
	case types.Bytes:
		return &typed{"bytes", base64.StdEncoding.EncodeToString([]byte(v))}, nil
	case types.Null:
		return &typed{"null_type", nil}, nil
	case types.Duration:
		return &typed{"google.protobuf.Duration", int64(v.Duration)}, nil
	case types.Timestamp:
		return &typed{"google.protobuf.Timestamp", v.Time.UTC().Format(time.RFC3339Nano)}, nil
	case *types.Optional:
		if !v.HasValue() {
			return &typed{"optional_type", nil}, nil
		}
		inner, err := encode(v.GetValue())
		if err != nil {
			return nil, err
		}
		return &typed{"optional_type", inner}, nil
	case ref.Type:
		return &typed{"type", v.TypeName()}, nil
	}
	if list, ok := value.(traits.Lister); ok && value.Type() == types.ListType {
		items := []*typed{}
		for it := list.Iterator(); it.HasNext() == types.True; {
			item, err := encode(it.Next())
			if err != nil {
				return nil, err
			}
			items = append(items, item)
		}
		return &typed{"list", items}, nil
	}
	if mapper, ok := value.(traits.Mapper); ok && value.Type() == types.MapType {
		pairs := [][2]*typed{}
		for it := mapper.Iterator(); it.HasNext() == types.True; {
			key := it.Next()
			k, err := encode(key)
			if err != nil {
				return nil, err
			}
			item, err := encode(mapper.Get(key))
			if err != nil {
				return nil, err
			}
			pairs = append(pairs, [2]*typed{k, item})
		}
		sort.Slice(pairs, func(i, j int) bool { return fmt.Sprint(*pairs[i][0]) < fmt.Sprint(*pairs[j][0]) })
		return &typed{"map", pairs}, nil
	}
	name := value.Type().TypeName()
	if native, err := value.ConvertToNative(reflect.TypeOf(&structpb.Value{})); err == nil {
		switch n := native.(type) {
		case *structpb.Value:
			return &typed{name, n.AsInterface()}, nil
		case *structpb.Struct:
			return &typed{name, n.AsMap()}, nil
		case *structpb.ListValue:
			return &typed{name, n.AsSlice()}, nil
		}
	}
	if stringer, ok := value.Value().(fmt.Stringer); ok {
		return &typed{name, stringer.String()}, nil
	}
	return &typed{name, fmt.Sprint(value.Value())}, nil
}
