// Package junit renders phase0 reports as JUnit XML, the test report format
// CI systems (Jenkins, GitLab, GitHub's test reporters) display natively:
// one testsuite per command, one testcase per model. A PASS (reused or
// not) is a passing testcase, FAIL and REJECTED are failures, ERROR is an
// error. The shape follows the Jenkins/Ant JUnit schema; testdata/junit.xsd
// holds it, and the tests validate every rendering against it.
package junit

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"phase0/gate/verdict"
	"phase0/internal/atomicfile"
	"phase0/internal/boundedfile"
	"phase0/output/report"
)

// maxDetails caps the finding lines a failure's text carries: the first
// ones say what is wrong; report.json keeps them all.
const maxDetails = 20

// Suite is one command's models.
type Suite struct {
	Command  string // "run", "inspect"
	Version  string // phase0's
	Shard    string // "2/4", or "" for the whole list
	Hostname string
	Started  time.Time
	Seconds  float64
	Cases    []Case
}

// Case is one model's report and the list line it came from ("" for a
// single MODEL argument).
type Case struct {
	Report   *report.Report
	ListedAt string
}

type testsuites struct {
	XMLName  xml.Name    `xml:"testsuites"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Suites   []testsuite `xml:"testsuite"`
}

type testsuite struct {
	Name       string     `xml:"name,attr"`
	Tests      int        `xml:"tests,attr"`
	Failures   int        `xml:"failures,attr"`
	Errors     int        `xml:"errors,attr"`
	Skipped    int        `xml:"skipped,attr"`
	Time       string     `xml:"time,attr"`
	Timestamp  string     `xml:"timestamp,attr"`
	Hostname   string     `xml:"hostname,attr,omitempty"`
	Properties []property `xml:"properties>property"`
	Cases      []testcase `xml:"testcase"`
}

type property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type testcase struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      string   `xml:"time,attr"`
	Error     *problem `xml:"error"`
	Failure   *problem `xml:"failure"`
	SystemOut string   `xml:"system-out,omitempty"`
}

type problem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// seconds is a JUnit time: decimal seconds, never negative or exponent form.
func seconds(s float64) string {
	return fmt.Sprintf("%.3f", max(s, 0))
}

// Marshal renders the suite as a JUnit XML document.
func Marshal(s Suite) ([]byte, error) {
	classname := "phase0." + s.Command
	suite := testsuite{
		Name:      "phase0 " + s.Command,
		Tests:     len(s.Cases),
		Time:      seconds(s.Seconds),
		Timestamp: s.Started.UTC().Format("2006-01-02T15:04:05"),
		Hostname:  s.Hostname,
		Properties: []property{
			{"phase0.version", s.Version},
			{"phase0.shard", report.OrDash(s.Shard)},
		},
		Cases: []testcase{},
	}
	for _, c := range s.Cases {
		tc, err := testcaseOf(c, classname)
		if err != nil {
			return nil, err
		}
		if tc.Failure != nil {
			suite.Failures++
		}
		if tc.Error != nil {
			suite.Errors++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	doc := testsuites{Name: "phase0", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: suite.Time, Suites: []testsuite{suite}}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the JUnit report: %w", err)
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// testcaseOf is one model's testcase: its verdict as JUnit says it.
func testcaseOf(c Case, classname string) (testcase, error) {
	r := c.Report
	if r == nil {
		return testcase{}, fmt.Errorf("junit: no report for %s", c.ListedAt)
	}
	tc := testcase{Name: r.Model, Classname: classname, Time: seconds(r.Seconds)}
	var out []string
	if c.ListedAt != "" {
		out = append(out, "listed at "+c.ListedAt)
	}
	out = append(out, fmt.Sprintf("%s: %s", r.Status, report.OrDash(r.ModelDir)))
	if r.ReusedFrom != nil {
		out = append(out, fmt.Sprintf("reused: inputs unchanged since %s, verdict from %s", r.ReusedFrom.Recorded.UTC().Format(time.RFC3339), r.ReusedFrom.Path))
	}
	for _, g := range r.Gates.Rows() {
		out = append(out, fmt.Sprintf("%s: %s %s", g.Title, g.Section.Status, g.Section.Summary))
	}
	tc.SystemOut = strings.Join(out, "\n")
	why, failed := report.Reason(r)
	if !failed {
		return tc, nil
	}
	details := why.Details
	if len(details) > maxDetails {
		details = append(details[:maxDetails:maxDetails], fmt.Sprintf("… %d more in report.json", len(why.Details)-maxDetails))
	}
	p := &problem{Message: why.Message, Type: string(r.Status), Text: strings.Join(details, "\n")}
	if r.Status == verdict.Error {
		tc.Error = p
	} else {
		tc.Failure = p
	}
	return tc, nil
}

// WriteFile writes the suite to path whole or not at all.
func WriteFile(path string, s Suite) error {
	b, err := Marshal(s)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, b); err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	return nil
}

// maxOwn bounds the file CheckReplaceable reads to tell whether phase0
// wrote it: far beyond any list's report (a 1 MiB list of models).
const maxOwn = 256 << 20

// CheckReplaceable says why path must not be written: it is not, whole, a
// JUnit report phase0 wrote (the model list, a config.json, a settings
// file, an empty file a shell redirect just made, a file that merely begins
// like one), and writing would destroy it. A missing file, or a report
// phase0 wrote — one that reads back into phase0's JUnit shape and renders
// again to the very same bytes — may be replaced.
func CheckReplaceable(path string) error {
	b, err := boundedfile.Read(path, maxOwn)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if len(b) == 0 {
		return fmt.Errorf("%s exists and is empty, not a JUnit report phase0 wrote (a shell redirect makes such a file): name another file, or remove it first", path)
	}
	if !ownReport(b) {
		return fmt.Errorf("%s exists and is not a JUnit report phase0 wrote: writing it would destroy it; name a new file, or remove it first", path)
	}
	return nil
}

// ownReport says whether b is exactly a document Marshal renders.
func ownReport(b []byte) bool {
	if !bytes.HasPrefix(b, []byte(xml.Header+"<testsuites name=\"phase0\"")) {
		return false
	}
	var doc testsuites
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	if err := dec.Decode(&doc); err != nil || doc.Name != "phase0" || len(doc.Suites) != 1 ||
		!strings.HasPrefix(doc.Suites[0].Name, "phase0 ") {
		return false
	}
	again, err := xml.MarshalIndent(doc, "", "  ")
	return err == nil && bytes.Equal(b, append([]byte(xml.Header), append(again, '\n')...))
}
