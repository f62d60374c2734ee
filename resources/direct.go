package resources

import (
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/google/uuid"

	"github.com/cq-source-x/cq-source-x/export/pqfile"
)

// columnsBuilder appends a table's rows to Parquet columns (pqfile.Columns)
// by each column's definition (column.putTo), with no SDK resource, scalar
// or resolver call per value, and no Arrow record: the exporter's path
// (account.ColumnSink); a plugin sync uses the SDK's resources. The values
// are those the SDK scheduler's records hold for the same rows — _cq_id
// included, random or deterministic as the SDK computes it — which
// TestDirectColumnsEqualSDKRecords checks.
type columnsBuilder[T any] struct {
	defs     []column[T] // per table column; zero for _cq_id and _cq_parent_id
	cqID     int         // index of _cq_id, or -1
	parentID int         // index of _cq_parent_id, or -1
	// idKeys are the columns a deterministic _cq_id is hashed from, sorted
	// by name as the SDK sorts them; nil means random ids, whose bytes are
	// read from crypto/rand 4 KB at a time (uuid.New reads 16 bytes a call).
	idKeys    []idKey[T]
	random    []byte // unused random bytes, 16 for each id
	randomBuf [randomIDsRead * 16]byte
}

type idKey[T any] struct {
	name string
	text func(T) string
}

// newColumnsBuilder matches table's columns (besides the SDK's _cq_id and
// _cq_parent_id, which must all be in cols) with their definitions.
func newColumnsBuilder[T any](table *schema.Table, cols []column[T], deterministicCQID bool) (*columnsBuilder[T], error) {
	if table.Parent != nil {
		return nil, fmt.Errorf("table %s: direct rows are for top-level tables (_cq_parent_id is always null here)", table.Name)
	}
	byName := map[string]column[T]{}
	for _, c := range cols {
		byName[c.Name] = c
	}
	cb := &columnsBuilder[T]{cqID: -1, parentID: -1}
	for i, c := range table.Columns {
		switch c.Name {
		case schema.CqIDColumn.Name:
			cb.cqID = i
			cb.defs = append(cb.defs, column[T]{})
			continue
		case schema.CqParentIDColumn.Name:
			cb.parentID = i
			cb.defs = append(cb.defs, column[T]{})
			continue
		}
		def, ok := byName[c.Name]
		if !ok || !arrow.TypeEqual(def.Type, c.Type) {
			return nil, fmt.Errorf("table %s: column %s has no direct definition of type %s", table.Name, c.Name, c.Type)
		}
		cb.defs = append(cb.defs, def)
	}
	// As schema.Resource.CalculateCQID: primary-key components first, then,
	// for a deterministic id, the primary keys; otherwise a random id.
	names := table.PrimaryKeyComponents()
	if len(names) == 0 && deterministicCQID {
		names = table.PrimaryKeys()
		if len(names) == 1 && names[0] == schema.CqIDColumn.Name {
			names = nil
		}
	}
	names = slices.Clone(names)
	slices.Sort(names)
	for _, name := range names {
		def, ok := byName[name]
		if !ok || def.text == nil {
			return nil, fmt.Errorf("table %s: _cq_id is hashed from column %s, which is not a string column", table.Name, name)
		}
		cb.idKeys = append(cb.idKeys, idKey[T]{name: name, text: def.text})
	}
	return cb, nil
}

// Append adds rows to c, which holds the columns of the builder's table.
// It goes column by column: each column's values are copied while that
// column's memory is in the CPU's cache.
func (cb *columnsBuilder[T]) Append(c *pqfile.Columns, rows []T) {
	for i, def := range cb.defs {
		col := c.Column(i)
		switch i {
		case cb.cqID:
			for _, row := range rows {
				col.AppendUUID(cb.id(row))
			}
		case cb.parentID:
			for range rows {
				col.AppendNull()
			}
		default:
			for _, row := range rows {
				def.putTo(col, row)
			}
		}
	}
}

// id is the row's _cq_id, computed as schema.Resource.CalculateCQID does.
func (cb *columnsBuilder[T]) id(row T) uuid.UUID {
	if cb.idKeys == nil {
		return cb.randomID()
	}
	h := sha256.New()
	for _, k := range cb.idKeys {
		h.Write([]byte(k.name))
		h.Write([]byte(k.text(row)))
	}
	return uuid.NewHash(sha1.New(), uuid.UUID{}, h.Sum(nil), 5)
}

// randomIDsRead is how many random ids' bytes are read from crypto/rand at
// a time.
const randomIDsRead = 256

// randomID is a random (version 4) UUID, as uuid.New makes.
func (cb *columnsBuilder[T]) randomID() uuid.UUID {
	if len(cb.random) == 0 {
		if _, err := rand.Read(cb.randomBuf[:]); err != nil {
			panic(err) // crypto/rand does not fail
		}
		cb.random = cb.randomBuf[:]
	}
	u := uuid.UUID(cb.random[:16])
	cb.random = cb.random[16:]
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant RFC 4122
	return u
}
