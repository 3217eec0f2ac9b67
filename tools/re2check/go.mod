module gpushare.local/re2check

go 1.22
