"""Summarizes a CSV file of sales by region and month."""
import argparse
import csv
import sys
from collections import defaultdict


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        for row in reader:
            yield row["region"], row["month"], float(row["amount"])


def summarize(rows):
    totals = defaultdict(float)
    counts = defaultdict(int)
    for region, month, amount in rows:
        totals[(region, month)] += amount
        counts[(region, month)] += 1
    summary = []
    for (region, month), total in sorted(totals.items()):
        average = total / counts[(region, month)]
        summary.append({"region": region, "month": month, "total": total, "average": average})
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", help="CSV file with region, month and amount columns")
    parser.add_argument("--min-total", type=float, default=0.0)
    args = parser.parse_args(argv)
    writer = csv.writer(sys.stdout)
    writer.writerow(["region", "month", "total", "average"])
    for item in summarize(read_rows(args.path)):
        if item["total"] < args.min_total:
            continue
        writer.writerow([item["region"], item["month"], "%.2f" % item["total"], "%.2f" % item["average"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
