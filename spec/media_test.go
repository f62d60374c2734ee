package spec

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
)

func TestMediaFilesAreOffUntilTheSectionIsThereThenPhotosAreOn(t *testing.T) {
	s := parseOK(t, `{"accounts":[{"access_token":"a"}]}`)
	if s.MediaFiles != nil {
		t.Fatal("a spec without media_files stores media files")
	}
	m := parseOK(t, `{"accounts":[{"access_token":"a"}],"media_files":{}}`).MediaFiles
	if !*m.Photos || *m.Videos || m.AllVariants || m.MaxFileSize.Bytes() != 512_000_000 || m.MaxBytesPerRun.Bytes() != 0 ||
		*m.Concurrency != 4 || m.Timeout.Duration() != 10*time.Minute || m.Store != "" {
		t.Fatalf("defaults %+v", m)
	}
}

func TestSizesTakeUnits(t *testing.T) {
	for in, want := range map[string]int64{
		`1048576`: 1 << 20, `"512MB"`: 512_000_000, `"2GiB"`: 2 << 30, `"1.5 GB"`: 1_500_000_000, `"300KiB"`: 300 << 10, `"7B"`: 7, `"10"`: 10,
	} {
		m := parseOK(t, `{"accounts":[{"access_token":"a"}],"media_files":{"max_file_size":`+in+`}}`).MediaFiles
		if got := m.MaxFileSize.Bytes(); got != want {
			t.Errorf("%s: %d, want %d", in, got, want)
		}
	}
}

func TestBadMediaFilesSectionsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, section, want string }{
		{"relative file URL", `{"store":"file://media"}`, "media_files.store: media store URL file://media: a file URL names a directory of this machine"},
		{"no scheme", `{"store":"/var/media"}`, "media_files.store: media store URL /var/media: the scheme must be file, s3, gs or azblob"},
		{"no bucket", `{"store":"s3:///x"}`, "media_files.store: media store URL s3:///x names no bucket"},
		{"nothing on", `{"photos":false}`, "media_files.photos: photos and videos are both off"},
		{"variants without videos", `{"all_variants":true}`, "media_files.all_variants: is true, but videos is off"},
		{"a size with a bad unit", `{"max_file_size":"5 megs"}`, `media_files.max_file_size: "5 megs" is not a size in bytes`},
		{"a negative size", `{"max_file_size":-1}`, "media_files.max_file_size: must be a size in bytes"},
		{"no size", `{"max_file_size":0}`, "media_files.max_file_size: must be at least 1 byte"},
		{"a budget below the largest file", `{"max_bytes_per_run":"100MB"}`, "media_files.max_bytes_per_run: is 100000000 bytes, less than max_file_size (512000000)"},
		{"concurrency", `{"concurrency":100}`, "media_files.concurrency: must be between 1 and 64, got 100"},
		{"no concurrency", `{"concurrency":0}`, "media_files.concurrency: must be between 1 and 64, got 0"},
		{"a negative concurrency", `{"concurrency":-1}`, "media_files.concurrency: must be between 1 and 64, got -1"},
		{"timeout", `{"timeout":"10ms"}`, "media_files.timeout: must be at least 1s"},
		{"misspelt", `{"photo":true}`, `unknown field "photo"`},
	} {
		_, err := Parse([]byte(`{"accounts":[{"access_token":"a"}],"media_files":` + tc.section + `}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	_, err := Parse([]byte(`{"accounts":[{"access_token":"a"}],"content":{"media":false},"media_files":{}}`))
	if err == nil || !strings.Contains(err.Error(), "media_files: stores the files of the media objects, which content.media turns off") {
		t.Errorf("media off: %v", err)
	}
}

// The JSON schema `cloudquery validate-config` checks accepts a size exactly
// when a sync does.
func TestTheJSONSchemaAcceptsTheSizesTheSpecDoes(t *testing.T) {
	validator, err := plugin.JSONSchemaValidator(JSONSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []string{`1`, `0`, `-1`, `1.5`, `"512MB"`, `"2GiB"`, `"1.5 GB"`, `"12"`, `"12 B"`, `"5 megs"`, `"1e9"`, `"MB"`, `""`, `"2gib"`, `true`} {
		text := fmt.Sprintf(`{"accounts":[{"access_token":"a"}],"media_files":{"max_bytes_per_run":%s}}`, size)
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatal(err)
		}
		schemaOK := validator.Validate(v) == nil
		_, err := Parse([]byte(text))
		if specOK := err == nil || strings.Contains(err.Error(), "less than max_file_size"); schemaOK != specOK {
			t.Errorf("max_bytes_per_run: %s: the schema accepts it: %v, the spec check: %v (%v)", size, schemaOK, specOK, err)
		}
	}
}
