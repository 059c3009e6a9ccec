import { launch } from './lib/browser.mjs';
const { context, close } = await launch();
const median = (xs) => { const s = xs.filter(Number.isFinite).sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
for (const [name, passive, gap] of [['nonpassive, move right before', false, 0], ['nonpassive, move 100ms before', false, 100], ['passive, move before', true, 0], ['passive, 100ms', true, 100]]) {
  const page = await context.newPage();
  await page.setContent(`<canvas id="plot" width="1200" height="600" style="width:1200px;height:600px"></canvas>`);
  await page.evaluate((passive) => {
    globalThis.__floor = [];
    const c = document.getElementById('plot');
    const g = c.getContext('2d');
    c.addEventListener('wheel', (e) => {
      if (!passive) e.preventDefault();
      const start = performance.now();
      g.fillStyle = g.fillStyle === '#000000' ? '#ffffff' : '#000000';
      g.fillRect(0, 0, 1200, 600);
      requestAnimationFrame(() => { globalThis.__floor.push({ latency: performance.now() - e.timeStamp, wait: start - e.timeStamp }); });
    }, { passive });
  }, passive);
  await page.waitForTimeout(300);
  const box = await page.locator('#plot').boundingBox();
  for (let k = 0; k < 24; k++) {
    await page.mouse.move(box.x + box.width / 2 + (k % 5) * 7, box.y + box.height * 0.75);
    if (gap) await page.waitForTimeout(gap);
    await page.mouse.wheel(0, k % 2 === 0 ? -240 : 240);
    await page.waitForTimeout(60);
  }
  const f = await page.evaluate(() => globalThis.__floor);
  console.log(name, 'latency', median(f.map((x) => x.latency)).toFixed(1), 'wait', median(f.map((x) => x.wait)).toFixed(1), 'n', f.length);
  await page.close();
}
await close();
