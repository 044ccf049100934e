"""What people read: report JSON, junit XML and summaries (report.py; its rows typed in
schema.py), plots (plots.py) and failure messages (failures.py)."""
