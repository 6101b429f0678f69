module github.com/podlife/podlife/hack/testimage

go 1.26.0
