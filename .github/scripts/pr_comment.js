// One comment per stack on the pull request, found again by a hidden marker and edited in place on every push.
// Called from actions/github-script with STACK and BODY_FILE in the environment. Lists every comment (paginated),
// so a busy PR still finds its comment, and only edits comments this workflow's bot wrote.
module.exports = async ({ github, context }) => {
  const fs = require('fs');
  const stack = process.env.STACK;
  const marker = `<!-- gpushare-preview:${stack} -->`;
  const body = `${marker}\n${fs.readFileSync(process.env.BODY_FILE, 'utf8')}`;
  const { owner, repo } = context.repo;
  const issue_number = context.payload.pull_request.number;
  const comments = await github.paginate(github.rest.issues.listComments, { owner, repo, issue_number, per_page: 100 });
  const ours = comments.find((c) => c.user && c.user.type === 'Bot' && c.body && c.body.startsWith(marker));
  if (ours) {
    await github.rest.issues.updateComment({ owner, repo, comment_id: ours.id, body });
  } else {
    await github.rest.issues.createComment({ owner, repo, issue_number, body });
  }
};
