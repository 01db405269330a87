"""The run pages' reads (`runs.pages.selectors`); the pages and the JSON report share them."""
