module github.com/podlife/podlife

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0 // indirect
	k8s.io/api v0.37.2 // indirect
	k8s.io/apimachinery v0.37.2 // indirect
	k8s.io/utils v0.0.0-20261023123148-ca04ba58ecab // indirect
)
