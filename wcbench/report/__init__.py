"""Records -> what people read: summaries with bootstrap intervals, results.json and the CSV
files, the self-contained report.html with its plots, and the leaderboards (submit / verify,
with the audit that re-scores a sample of videos)."""
